// Package gitops keeps snapshots of a workspace in a bare shadow git
// repository in the state dir, written with go-git's object storage (never
// the Worktree, never the git command line), with a persisted stat cache so
// unchanged files are never re-hashed. It restores snapshots writing only
// what differs, reports conflicts instead of overwriting other people's
// edits, prunes old runs within a quota, and never touches the user's .git.
//
// Layout of a store (StoreDir): a bare repository (HEAD, config, objects,
// refs/agentd/runs/<run>/<seq>, refs/agentd/manual/<n>) plus agentd/ with
// the lock, the stat cache, the file set's directory cache (so that a new
// process lists again only directories that changed) and the restore
// journal, and rpc/ with the server's state. A snapshot's metadata
// is JSON in its commit message, so it is exactly as durable as the commit.
//
// Durability: new objects go into one pack per snapshot (streamed: blobs
// are compressed by parallel workers and appended; the .idx is written by
// go-git's idxfile encoder), fsync'd before the reference that names them
// is written (atomically, through a billy filesystem that makes go-git's
// writes durable). A restore journals its plan before it touches the
// workspace and changes it only through directory handles (openat with
// O_NOFOLLOW, renameat, unlinkat: restore_apply.go, wsfs.go); a failed
// restore journals its rollback before running it. Each journaled op
// carries the file's state before it (hash and mode, or absent) as well as
// its target: Open finishes or rolls back what a crash or failure left,
// but only for files still in the state the op expected (a file already
// at the target is done); a file changed since the crash is kept, and
// named in the RecoveryReport that Store.Recovered hands to the next
// command (with the safety snapshot, the way back), and every temporary
// file of the interrupted operation's nonces is removed. What it cannot
// finish or roll back is reported by
// Store.Problem (with the snapshot that holds the user's state) rather
// than keeping the store from opening, and Store.Doctor retries. A file
// lock serialises the daemon and CLI invocations on one store.
//
// The ledger (ledger.go): every write the agent makes is recorded before it
// is made, as an edit (the file's state before and after) under an owner
// ("run/<id>", "undo/<id>"). Its contents are blobs in the packs (only the
// missing ones written, fsync'd first); its entries are one JSON-lines file
// per owner under agentd/ledger/, appended and fsync'd under the store
// lock. A file and not commits under refs: an entry is appended without
// building trees or commits, a torn last line is all a crash can leave (a
// reader skips it, the next append cuts it off), an owner's history is
// one file to read or drop, and gc reads the same files to keep their
// blobs and removes the ledger of a run whose snapshots it prunes.
// Store.Revert (undo) folds the owners' edits newest first onto each file
// as it is now (read through directory handles), three-way merging where
// the user changed it too (revert.go); it writes through the restore's
// journaled applier after a safety snapshot, refusing to write anything
// when a file conflicts unless told to keep or overwrite the conflicts.
//
// Protection: Store.ProtectionBase is the one rule every front end's
// restore uses to tell the agent's changes from everyone else's.
//
// Reads: objects are read from the packs through go-git's packfile reader
// with indexes the store loads once (sliced from one read of each .idx,
// not decoded) and keeps up to date as packs come and go (go-git's
// ObjectStorage decodes every index again after each new pack); a
// snapshot that writes nothing but its commit loads none. Once there are
// more than packMergeAt packs, the small ones are merged by copying their
// compressed objects as they are.
//
// One-shot commands (agentd snapshot create/restore, agentd run's first
// snapshot) pay the cold start: OneShot turns the collector off and makes
// the store map its caches and pack indexes instead of reading them; the
// stat cache is decoded in place in the background while the directory
// cache loads (whose paths are substrings of the mapped file), and no map
// of every path is built unless something needs it (look-ups go to the
// records in path order). The walk opens each cached directory O_PATH
// from one open root, stats its files from it, and hands over only the
// files to hash. What is left is one lstat per file, which git pays too
// (twice for add and commit). A restore writes its result snapshot's
// objects while it applies its ops (the reference only once the restore
// stood), lists the result's changes from its own ops, and syncs only the
// directories whose entries it changed. The caches are saved only when
// that costs less than what the next process would redo: the stat cache
// not after a restore that leaves at most a file in 256 to re-hash (the
// next snapshot that hashes them saves it), nor for racy files alone; the
// directory cache not while the listings made anew hold at most 256
// entries (and are under an eighth of the directories).
//
// With Watch (the daemon), a snapshot re-stats only the paths the file
// watcher reports and rebuilds only the trees above them; every
// fullScanEvery-th snapshot, an overflow or an ignore-rule change walks the
// whole tree again.
package gitops
