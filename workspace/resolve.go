package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.lsp.dev/uri"

	"github.com/agentd/agentd/internal/platform"
)

// maxLinks bounds the symlinks followed while resolving one path (Linux
// allows 40 per lookup; a chain longer than this is refused).
const maxLinks = 40

// errLinkLoop is wrapped for a path with too many levels of symlinks.
var errLinkLoop = errors.New("too many levels of symbolic links")

// resolved is a path accepted by resolve.
type resolved struct {
	rel  string // lexical: clean, slash-separated, "." for the root
	abs  string // root joined with rel
	real string // rel with every symlink of its existing part resolved ("." for the root)
}

// Resolve turns a workspace-relative path, an absolute path inside the root
// or a file:// URI into a clean slash-separated relative path and the
// absolute OS path. Anything that leaves the root — lexically or through a
// symlink in any existing component — is a *PathError wrapping
// ErrOutsideRoot. The root itself resolves to ".".
//
// Symlinks that stay inside the root are allowed; rel and abs then name the
// path as given (cleaned), not the link's target. A missing final part is
// allowed (to create files); its existing parents are checked. Relative
// paths are OS paths: on Unix a backslash is an ordinary character of a
// name. A path with a NUL byte or a URI that is not a local file:// URI is
// a *PathError wrapping ErrInvalidPath. Resolve does not refuse `.git`;
// writes there are refused by the writing methods (ErrGitDir).
func (w *Workspace) Resolve(p string) (rel, abs string, err error) {
	r, err := w.resolve(p)
	if err != nil {
		return "", "", err
	}
	return r.rel, r.abs, nil
}

// ResolveWrite is Resolve for a path that is going to be written, created,
// removed or renamed: it also refuses the root itself and anything inside a
// `.git` directory (ErrGitDir), also when a symlink leads there.
func (w *Workspace) ResolveWrite(p string) (rel, abs string, err error) {
	r, err := w.resolveWrite(p)
	if err != nil {
		return "", "", err
	}
	return r.rel, r.abs, nil
}

// URI returns the file:// URI of a relative path, encoded the way VS Code
// encodes it.
func (w *Workspace) URI(rel string) string {
	return string(uri.File(filepath.Join(w.root, filepath.FromSlash(rel))))
}

func (w *Workspace) resolveWrite(p string) (resolved, error) {
	r, err := w.resolve(p)
	if err != nil {
		return r, err
	}
	if r.rel == "." || r.real == "." {
		return resolved{}, &PathError{Path: p, Err: fmt.Errorf("%w: the workspace root itself cannot be written", ErrInvalidPath)}
	}
	if inGitDir(r.rel) || inGitDir(r.real) {
		return resolved{}, &PathError{Path: p, Err: ErrGitDir}
	}
	return r, nil
}

// inGitDir reports whether a slash-separated relative path has a
// component that names a `.git` directory as this OS's file system does:
// in any case (`.GIT`), and on Windows every alias (`.git.`, `.git `,
// `GIT~1`): platform.InGitDir.
func inGitDir(rel string) bool { return platform.InGitDir(rel) }

func (w *Workspace) resolve(p string) (resolved, error) {
	name, err := pathOf(p)
	if err != nil {
		return resolved{}, &PathError{Path: p, Err: err}
	}
	rel, ok := w.lexicalRel(name)
	if !ok {
		return resolved{}, &PathError{Path: p, Err: ErrOutsideRoot}
	}
	real, err := w.evalInside(rel)
	if err != nil {
		return resolved{}, &PathError{Path: p, Err: err}
	}
	r := resolved{
		rel:  filepath.ToSlash(rel),
		abs:  filepath.Join(w.root, rel),
		real: filepath.ToSlash(real),
	}
	return r, nil
}

// pathOf turns the caller's string into an OS path (absolute or relative),
// decoding a file:// URI.
func pathOf(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: contains a NUL byte", ErrInvalidPath)
	}
	if len(p) >= 5 && strings.EqualFold(p[:5], "file:") {
		u, err := uri.Parse(p)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidPath, err)
		}
		if a := u.Authority(); a != "" && !strings.EqualFold(a, "localhost") {
			return "", fmt.Errorf("%w: file URI names the remote host %q; only local files can be used", ErrInvalidPath, a)
		}
		name := u.Path()
		if strings.IndexByte(name, 0) >= 0 {
			return "", fmt.Errorf("%w: contains a NUL byte", ErrInvalidPath)
		}
		if name == "" {
			return "", fmt.Errorf("%w: file URI without a path", ErrInvalidPath)
		}
		return filepath.FromSlash(FromURIPath(name)), nil
	}
	return filepath.FromSlash(p), nil
}

// lexicalRel returns the clean relative OS path of name (absolute or
// relative) and whether it stays inside the root lexically.
func (w *Workspace) lexicalRel(name string) (string, bool) {
	if filepath.IsAbs(name) {
		name = filepath.Clean(name)
		if rel, ok := under(w.root, name); ok {
			return rel, true
		}
		if w.alias != "" {
			if rel, ok := under(w.alias, name); ok {
				return rel, true
			}
		}
		return "", false
	}
	rel := filepath.Clean(name)
	if rel == "." {
		return ".", true
	}
	if !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// under returns path relative to dir if path is dir or inside it (both
// absolute and clean).
func under(dir, path string) (string, bool) {
	if len(path) == len(dir) && samePrefix(path, dir) {
		return ".", true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if samePrefix(path, prefix) {
		return path[len(prefix):], true
	}
	return "", false
}

// isAncestor reports whether dir is a proper ancestor of path.
func isAncestor(dir, path string) bool {
	rel, ok := under(dir, path)
	return ok && rel != "."
}

// evalInside resolves the symlinks of the existing part of the lexically
// local path rel, the way the kernel would, and returns the symlink-free
// path relative to the root. It refuses the path if a symlink, once its
// target is fully walked, leads outside the root, or if the walk reaches an
// existing directory outside the root other than the root's own ancestors
// (which an absolute link into the root, or "../ws/x", passes through). A
// missing component ends the lookups: the rest is joined lexically and must
// stay inside too.
func (w *Workspace) evalInside(rel string) (string, error) {
	if rel == "." {
		return ".", nil
	}
	// todo holds the components still to walk, last one first; ends holds,
	// for each link being walked, the length of todo at which its target
	// has been consumed.
	todo := splitReversed(nil, rel)
	var ends []int
	dest := w.root
	links := 0
	missing := false
	for len(todo) > 0 {
		comp := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch comp {
		case "", ".":
		case "..":
			// dest is symlink-free, so its parent is the real "..".
			dest = filepath.Dir(dest)
		default:
			dest = filepath.Join(dest, comp)
		}
		if !w.insideOrAncestor(dest) {
			return "", ErrOutsideRoot
		}
		if !missing && comp != "" && comp != "." && comp != ".." {
			fi, err := os.Lstat(dest)
			switch {
			case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
				missing = true
			case err != nil:
				return "", err
			case fi.Mode()&fs.ModeSymlink != 0:
				links++
				if links > maxLinks {
					return "", errLinkLoop
				}
				target, err := os.Readlink(dest)
				if err != nil {
					return "", err
				}
				if filepath.IsAbs(target) {
					vol := filepath.VolumeName(target)
					dest = vol + string(filepath.Separator)
					target = target[len(vol):]
				} else {
					dest = filepath.Dir(dest)
				}
				ends = append(ends, len(todo))
				todo = splitReversed(todo, target)
				if len(todo) == ends[len(ends)-1] {
					// A link to "/" or "": its target is dest itself.
					if _, ok := under(w.root, dest); !ok {
						return "", ErrOutsideRoot
					}
					ends = ends[:len(ends)-1]
				}
				continue
			}
		}
		// A link whose target is now fully walked must have led inside.
		for len(ends) > 0 && ends[len(ends)-1] == len(todo) {
			ends = ends[:len(ends)-1]
			if _, ok := under(w.root, dest); !ok {
				return "", ErrOutsideRoot
			}
		}
	}
	relReal, ok := under(w.root, dest)
	if !ok {
		return "", ErrOutsideRoot
	}
	return relReal, nil
}

// splitReversed appends the components of p to stack, last one first, so
// that the first component ends up on top.
func splitReversed(stack []string, p string) []string {
	parts := strings.Split(p, string(filepath.Separator))
	for i := len(parts) - 1; i >= 0; i-- {
		stack = append(stack, parts[i])
	}
	return stack
}

// insideOrAncestor reports whether dest is the root, inside it, or one of
// its ancestors (which a link's absolute target or ".." passes through).
func (w *Workspace) insideOrAncestor(dest string) bool {
	if _, ok := under(w.root, dest); ok {
		return true
	}
	return isAncestor(dest, w.root)
}

// resolveEntry resolves p for an operation on the directory entry it
// names rather than on what the entry leads to: the parent directories are
// resolved as resolve does (links inside followed, anything leaving the
// root refused), the last name is taken as it is. real is then the
// symlink-free parent joined with that name, so a symbolic link there is
// the link itself, whatever it points at (inside, outside, nowhere). For a
// path whose last name is not a link, real is what resolve gives.
func (w *Workspace) resolveEntry(p string) (resolved, error) {
	name, err := pathOf(p)
	if err != nil {
		return resolved{}, &PathError{Path: p, Err: err}
	}
	rel, ok := w.lexicalRel(name)
	if !ok {
		return resolved{}, &PathError{Path: p, Err: ErrOutsideRoot}
	}
	r := resolved{rel: filepath.ToSlash(rel), abs: filepath.Join(w.root, rel), real: "."}
	if rel == "." {
		return r, nil
	}
	dir, base := filepath.Split(rel)
	realDir := "."
	if dir != "" {
		if realDir, err = w.evalInside(filepath.Clean(dir)); err != nil {
			return resolved{}, &PathError{Path: p, Err: err}
		}
	}
	r.real = filepath.ToSlash(filepath.Join(realDir, base))
	return r, nil
}

// resolveEntryWrite is resolveEntry for a write, removal or rename of the
// entry: the root itself and `.git` (by the path as given or its parents'
// real form) are refused.
func (w *Workspace) resolveEntryWrite(p string) (resolved, error) {
	r, err := w.resolveEntry(p)
	if err != nil {
		return r, err
	}
	if r.rel == "." || r.real == "." {
		return resolved{}, &PathError{Path: p, Err: fmt.Errorf("%w: the workspace root itself cannot be written", ErrInvalidPath)}
	}
	if inGitDir(r.rel) || inGitDir(r.real) {
		return resolved{}, &PathError{Path: p, Err: ErrGitDir}
	}
	return r, nil
}
