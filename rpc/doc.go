// Package rpc is agentd's JSON-RPC server for editors: LSP framing on
// stdio (robust against malformed frames), the lifecycle, document sync
// into workspace overlays, and one file per method group (plan, run,
// changes, snapshot, undo, policy, tools) as thin adapters over the
// workspace's session (package session: store, journal, review book,
// policy, undo) and the engine. It also implements the engine's hooks that need a person:
// approvals (agentd/approval/request or window/showMessageRequest), review
// of change sets (accept/reject per hunk, rebasing on the user's typing),
// writes through workspace/applyEdit, and progress ($/progress plus
// agentd/run/didChange, with command output coalesced). Plans, pending
// change sets, runs, remembered rules, the approval policy and the undo
// log are kept in the workspace's journal (package journal, shared with
// agentd run and ACP), so a restarted daemon finds them.
//
// Notifications are handled in arrival order on the connection's read
// loop; requests that may block run concurrently (jsonrpc2.Async). The
// protocol is documented in docs/protocol.md.
package rpc
