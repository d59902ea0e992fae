// Package llm is agentd's model-driven half: providers (OpenAI-compatible
// chat completions and Anthropic Messages, over net/http with streaming,
// tool calls, usage and structured output), their configuration, error
// classification with bounded retries, costs, the step model that runs llm
// and agent steps (StepModel, an engine.StepModel), the planner that makes,
// repairs and extends plans (Planner: Create and Regenerate for `agentd
// plan` and agentd/plan/create, Recover and RePlan as the engine.Planner).
// Create gives the model a repository map (internal/repomap) and lets it
// explore the workspace with the read-only tools for bounded rounds
// (explore.go) before it answers; what it read becomes the plan's context.
//
// The dynamic update rules that add model-driven steps live in engine
// (engine.DefaultRules); this package runs the steps they add.
//
// # Configuration
//
// The model is chosen by, from weakest to strongest: "model" in
// $XDG_CONFIG_HOME/agentd/config.json (~/.config/agentd/config.json), the
// workspace's .agentd/config.json, AGENTD_MODEL, and the editor's
// initializationOptions.model (Settings.SetEditor). A model is
// "provider:model" (openai, anthropic, ollama) or the name of a profile:
//
//	{
//	  "model": "local",
//	  "profiles": {
//	    "local": {"provider": "openai", "model": "qwen2.5-coder", "baseUrl": "http://localhost:8080/v1",
//	              "apiKeyEnv": "LOCAL_KEY", "structured": "json_object", "timeout": "10m", "idleTimeout": "5m"}
//	  },
//	  "costs": {"qwen2.5-coder": {"input": 0, "output": 0}}
//	}
//
// Base URLs come from the profile, the editor, or OPENAI_BASE_URL,
// ANTHROPIC_BASE_URL, OLLAMA_HOST; keys only from environment variables
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, or a profile's apiKeyEnv). A
// workspace's own config may choose the model and nothing else, so that a
// cloned repository cannot send the user's key elsewhere. Keys are removed
// from every error and log line.
//
// Costs are USD per million tokens; the built-in table (cost.go) covers the
// common OpenAI and Anthropic models and "costs" extends or overrides it.
//
// # Errors
//
// Provider errors are *Error: rate limits (Retry-After in seconds or as an
// HTTP date), 5xx, timeouts (per attempt, and no data within the idle
// timeout), network failures and broken streams are retryable
// (IsRetryable) and retried inside Client.Call with capped exponential
// backoff; other 4xx are not. Each error says what to do.
//
// It imports only engine types and interfaces, engine/tools for the tool
// schemas and the exploration's tools, workspace (with internal/fileset)
// for the planner's workspace summary, internal/repomap, and gitops for
// the default state dir only.
package llm
