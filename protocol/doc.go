// Package protocol is agentd's wire: the params and results of every
// JSON-RPC method the server speaks (docs/protocol.md), generated from the
// one schema beside that document (docs/protocol.schema.json), the same
// schema the VS Code extension's types (editors/vscode/src/protocol.gen.ts)
// are generated from. Edit the schema, never protocol_gen.go, and run
//
//	go generate ./protocol
//
// A test fails when the generated files are not what the schema makes.
// The package imports nothing of the module: package rpc converts the
// core's types to these at its edge.
package protocol

//go:generate go run ./generate

// Direction says who sends a method.
type Direction int

// The two directions.
const (
	ClientToServer Direction = iota
	ServerToClient
)

// MethodInfo is a method of the protocol.
type MethodInfo struct {
	Method       string
	Direction    Direction
	Notification bool
}
