// Package acp is agentd's Agent Client Protocol front end (`agentd acp`):
// Zed, the JetBrains IDEs, Emacs agent-shell, CodeCompanion and other ACP
// clients start it and talk newline-delimited JSON-RPC 2.0 on stdio.
//
// It is a third adapter over the same engine as the editor server (rpc)
// and the terminal (cmd/agentd): a prompt becomes a plan through the
// planner, the plan runs in the engine, and the engine's events become
// session/update notifications. It holds no rule of its own: the
// workspace's session (package session) gives it the store, journal,
// review book, policy and undo; approvals, remembered "always" answers,
// review, restore and snapshots call the core packages, and every such
// call is in core.go.
//
// What it hides: the ACP wire types (github.com/coder/acp-go-sdk, used
// only here), the mapping of steps to tool calls, and the client's
// capabilities (its file system and terminal stand in for agentd's own
// when the client declares them).
package acp
