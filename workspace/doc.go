// Package workspace is the sandboxed view of the folder a user has open:
// path resolution that refuses anything outside the root, the overlays of
// unsaved editor buffers (so every read sees what the user sees), atomic
// writes that keep file modes, ignore-aware listing through fileset, and
// change sets: what a step proposes to do to files, with hunks, checked
// against the content it was computed from when it is applied.
package workspace
