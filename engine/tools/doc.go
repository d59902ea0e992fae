// Package tools holds agentd's built-in tools, one file per tool, each with
// its typed arguments, the JSON Schema the plan validator checks them
// against, a category and a risk that drive approval. Tools that change
// files never write: they return a proposed change set, and the engine
// decides (by review mode) when it is applied.
package tools
