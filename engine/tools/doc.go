// Package tools holds agentd's built-in tools, one file per tool, each with
// its typed arguments, the JSON Schema the plan validator checks them
// against, a category and a risk that drive approval, and a model-facing
// description embedded from the .md file next to it. builtins.go lists them.
//
// Tools that change files never write: they build a change set with the
// workspace's Propose builder and return it in Result.Changes; the engine
// decides (by review mode) when it is applied. Their Output summarises the
// change (files, operations, added and removed lines).
//
// Every path argument goes through Workspace.Resolve: a path outside the
// workspace fails with an error wrapping *workspace.PathError and
// workspace.ErrOutsideRoot. Links are links: write_file, delete_file and
// move_file act on a symbolic link itself (Workspace.Link), wherever it
// points; edit_file, json_patch and apply_patch follow one only to a
// regular file inside the workspace and say so in the output's note. Reads see unsaved editor buffers (overlays).
// Failures the engine or a person decides on are *Error values with a Code
// (NOT_FOUND, AMBIGUOUS_MATCH, EXIT_CODE, TIMEOUT, ...), and their messages
// name the file or argument and say what to do.
//
// A tool may return both a Result and an error. run_command does so when the
// command fails (exit code not in okExitCodes, timeout): the engine records
// the output of the failed step so that recovery and later steps can use
// ${step.stderr}.
//
// Tools log through Env.Log (the engine's logger, or nothing), never the
// global slog logger.
//
// search_code is built for 100k-file trees: the ignore-aware walk feeds
// GOMAXPROCS+1 workers that read each file with plain system calls into a
// reused buffer, skip binary files, and look for a byte sequence every match
// must contain (search_prefilter.go) before the regexp engine sees a line.
// bench_search.sh compares it with ripgrep.
package tools
