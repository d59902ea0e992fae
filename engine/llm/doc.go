// Package llm is agentd's model-driven half: providers (OpenAI-compatible
// chat completions and Anthropic Messages, over net/http with streaming,
// tool calls, usage and structured output), their configuration, error
// classification with bounded retries, costs, the step model that runs llm
// and agent steps (engine.StepModel), the planner that makes, repairs and
// extends plans (PlanMaker, engine.Planner) and the dynamic update rules
// that need a model.
//
// It imports only engine types and interfaces, engine/tools for the tool
// schemas, and workspace for the planner's workspace summary.
package llm
