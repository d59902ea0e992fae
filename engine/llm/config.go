package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/engine"
)

// Provider kinds.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderOllama    = "ollama" // OpenAI-compatible at OLLAMA_HOST/v1
)

// Default endpoints.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOllamaHost       = "http://localhost:11434"
)

// Profile is a named model configuration in the user's config file.
type Profile struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	BaseURL  string `json:"baseUrl,omitempty"`
	// APIKeyEnv names the environment variable holding the key (the key
	// itself never lives in a config file).
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Structured is json_schema (default), json_object or none (OpenAI-compatible).
	Structured string `json:"structured,omitempty"`
	Timeout    string `json:"timeout,omitempty"` // per attempt, Go duration
	// IdleTimeout is the longest silence of the server within an attempt
	// (Go duration; default DefaultIdleTimeout, "0s" for none).
	IdleTimeout string `json:"idleTimeout,omitempty"`
	MaxTokens   int    `json:"maxTokens,omitempty"`
	// Vision says the model takes images: prompts with images (ACP) are
	// sent to it; without it they are refused.
	Vision bool `json:"vision,omitempty"`
}

// FileConfig is ~/.config/agentd/config.json.
type FileConfig struct {
	Model    string             `json:"model,omitempty"` // "provider:model" or a profile name
	Profiles map[string]Profile `json:"profiles,omitempty"`
	Costs    map[string]Price   `json:"costs,omitempty"`
}

// workspaceConfig is what a workspace's .agentd/config.json may set: only
// the model (or a profile of the user's). Base URLs and keys are never
// taken from a workspace: a cloned repository must not be able to send
// the user's key elsewhere.
type workspaceConfig struct {
	Model string `json:"model,omitempty"`
}

// EditorOptions are the model settings an editor sends in
// initializationOptions ({provider, model, baseUrl}).
type EditorOptions struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"`
}

// Spec is a resolved model: provider, model, endpoint and where the key is.
type Spec struct {
	Provider   string // openai, anthropic (ollama resolves to openai)
	Model      string
	BaseURL    string
	APIKeyEnv  string
	Structured string
	Timeout    time.Duration
	Idle       time.Duration
	MaxTokens  int
	Vision     bool // the model takes images (Profile.Vision)
	// Label is how the model was named, for messages.
	Label string
}

// Settings are the model settings of one process or editor session.
type Settings struct {
	// Model is the default model: "provider:model" or a profile name.
	Model    string
	Profiles map[string]Profile
	Costs    CostTable
	// Editor, if set, are the editor's choices (SetEditor).
	Editor *EditorOptions
	// Getenv reads the environment (os.Getenv by default).
	Getenv func(string) string
	// HTTPClient is used for every request (http.DefaultClient if nil).
	HTTPClient *http.Client
	Retry      RetryPolicy
	Logger     *slog.Logger
}

// ConfigPath returns the user's config file path ($XDG_CONFIG_HOME respected).
func ConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "agentd", "config.json")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "agentd", "config.json")
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "agentd", "config.json")
	}
	return ""
}

// ConfigBytes is one config file as the caller read it (session reads
// both files once, for every setting): its path, its bytes, and the error
// reading it gave (nil for a missing file, as for none).
type ConfigBytes struct {
	Path string
	Data []byte
	Err  error
}

// Sources are what Decode makes the model settings from: the user's
// config file, the workspace's .agentd/config.json, and the environment
// (AGENTD_MODEL, the keys).
type Sources struct {
	User      ConfigBytes
	Workspace ConfigBytes
	Getenv    func(string) string // os.Getenv if nil
	Logger    *slog.Logger
}

// Decode makes the settings: the user's config file, then the
// workspace's model, then AGENTD_MODEL (each overriding the one before).
// A missing file is fine; a broken one is an error naming it. Reading the
// files is the caller's (session.LoadSettings): this decodes their model
// keys only.
func Decode(src Sources) (*Settings, error) {
	getenv := src.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	log := src.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Settings{Getenv: getenv, Logger: log, Profiles: map[string]Profile{}}
	var fc FileConfig
	if u := src.User; u.Path != "" {
		switch {
		case u.Err == nil && u.Data != nil:
			if err := json.Unmarshal(u.Data, &fc); err != nil {
				return nil, fmt.Errorf("reading %s: %w (fix the JSON or move the file away)", u.Path, err)
			}
		case u.Err != nil && !errors.Is(u.Err, os.ErrNotExist):
			return nil, fmt.Errorf("reading %s: %w", u.Path, u.Err)
		}
	}
	s.Model = fc.Model
	for k, v := range fc.Profiles {
		s.Profiles[k] = v
	}
	s.Costs = NewCostTable(fc.Costs)
	if w := src.Workspace; w.Path != "" && w.Err == nil && w.Data != nil {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(w.Data, &raw); err != nil {
			return nil, fmt.Errorf("reading %s: %w", w.Path, err)
		}
		for k := range raw {
			if k != "model" && k != "sensitive" && k != "maxFileSize" { // sensitive: workspace.SensitivePattern; maxFileSize: session.ConfigMaxFileSize
				log.Warn("ignoring a setting in the workspace config: a workspace may only choose a model; base URLs, keys and profiles come from your own config",
					"file", w.Path, "field", k)
			}
		}
		var wc workspaceConfig
		if m, ok := raw["model"]; ok {
			if err := json.Unmarshal(m, &wc.Model); err != nil {
				return nil, fmt.Errorf("reading %s: model: %w", w.Path, err)
			}
		}
		if wc.Model != "" {
			s.Model = wc.Model
		}
	}
	if m := getenv("AGENTD_MODEL"); m != "" {
		s.Model = m
	}
	return s, nil
}

// SetEditor applies an editor's initializationOptions: its model replaces
// the default, and its base URL is used for that provider.
func (s *Settings) SetEditor(o EditorOptions) {
	if o.Provider == "" && o.Model == "" && o.BaseURL == "" {
		return
	}
	s.Editor = &o
	if o.Model != "" {
		if o.Provider != "" {
			s.Model = o.Provider + ":" + o.Model
		} else {
			s.Model = o.Model
		}
	}
}

// Configured reports whether a default model is set.
func (s *Settings) Configured() bool { return s != nil && s.Model != "" }

// NoModelHelp says how to configure a model.
const NoModelHelp = `set one, for example:
  AGENTD_MODEL=openai:gpt-4o            (with OPENAI_API_KEY)
  AGENTD_MODEL=anthropic:claude-sonnet-4-20250514   (with ANTHROPIC_API_KEY)
  AGENTD_MODEL=ollama:qwen2.5-coder     (a local Ollama at http://localhost:11434, or OLLAMA_HOST)
  OPENAI_BASE_URL=http://localhost:8080/v1 AGENTD_MODEL=openai:local   (llama.cpp, vLLM, LM Studio)
or put {"model": "..."} or profiles in ~/.config/agentd/config.json`

// Resolve turns a model name ("" = the default) into a Spec. Errors wrap
// engine.ErrNoModel when no model is configured or a key is missing.
func (s *Settings) Resolve(name string) (*Spec, error) {
	label := name
	if name == "" {
		name = s.Model
		label = name
	}
	if name == "" {
		return nil, fmt.Errorf("%w; %s", engine.ErrNoModel, NoModelHelp)
	}
	var pr Profile
	if p, ok := s.Profiles[name]; ok {
		pr = p
	} else {
		// "provider:model"; "provider/model" is accepted too (the engine's
		// own hint uses it). The first separator counts, so model names may
		// hold either ("ollama:qwen2.5-coder:7b", "openai:org/model").
		i := strings.IndexAny(name, ":/")
		ok := i > 0
		var prov, model string
		if ok {
			prov, model = name[:i], name[i+1:]
		}
		if !ok || model == "" {
			return nil, fmt.Errorf("%w: model %q is neither provider:model nor a profile in %s; %s",
				engine.ErrNoModel, name, ConfigPath(s.getenv), NoModelHelp)
		}
		pr = Profile{Provider: prov, Model: model}
	}
	sp := &Spec{Model: pr.Model, APIKeyEnv: pr.APIKeyEnv, Structured: pr.Structured, MaxTokens: pr.MaxTokens, Vision: pr.Vision, Label: label}
	if pr.Timeout != "" {
		d, err := time.ParseDuration(pr.Timeout)
		if err != nil {
			return nil, fmt.Errorf("profile %q: timeout %q: %w", name, pr.Timeout, err)
		}
		sp.Timeout = d
	}
	sp.Idle = DefaultIdleTimeout
	if pr.IdleTimeout != "" {
		d, err := time.ParseDuration(pr.IdleTimeout)
		if err != nil {
			return nil, fmt.Errorf("profile %q: idleTimeout %q: %w", name, pr.IdleTimeout, err)
		}
		sp.Idle = d
	}
	editorURL := ""
	if s.Editor != nil && s.Editor.BaseURL != "" && (s.Editor.Provider == "" || s.Editor.Provider == pr.Provider) {
		editorURL = s.Editor.BaseURL
	}
	switch pr.Provider {
	case ProviderOpenAI:
		sp.Provider = ProviderOpenAI
		sp.BaseURL = first(pr.BaseURL, editorURL, s.getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
		if sp.APIKeyEnv == "" {
			sp.APIKeyEnv = "OPENAI_API_KEY"
		}
	case ProviderOllama:
		sp.Provider = ProviderOpenAI
		host := first(s.getenv("OLLAMA_HOST"), DefaultOllamaHost)
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		sp.BaseURL = first(pr.BaseURL, editorURL, strings.TrimRight(host, "/")+"/v1")
		if sp.Structured == "" {
			sp.Structured = StructuredSchema
		}
	case ProviderAnthropic:
		sp.Provider = ProviderAnthropic
		sp.BaseURL = first(pr.BaseURL, editorURL, s.getenv("ANTHROPIC_BASE_URL"), DefaultAnthropicBaseURL)
		if sp.APIKeyEnv == "" {
			sp.APIKeyEnv = "ANTHROPIC_API_KEY"
		}
	default:
		return nil, fmt.Errorf("%w: model %q: unknown provider %q (use openai, anthropic or ollama)", engine.ErrNoModel, name, pr.Provider)
	}
	if sp.APIKeyEnv != "" && s.getenv(sp.APIKeyEnv) == "" &&
		(sp.BaseURL == DefaultOpenAIBaseURL || sp.BaseURL == DefaultAnthropicBaseURL) {
		return nil, fmt.Errorf("%w: model %q needs an API key: set %s (or use a local server, e.g. AGENTD_MODEL=ollama:qwen2.5-coder)",
			engine.ErrNoModel, label, sp.APIKeyEnv)
	}
	return sp, nil
}

// CheckImages says whether imgs may be sent to the model name ("" = the
// default): the model must be configured with vision (a profile's
// "vision": true), each image one of ImageMIMETypes and at most
// MaxImageBytes, all of them at most MaxImagesBytes. The error says what
// to do.
func (s *Settings) CheckImages(name string, imgs []Image) error {
	if len(imgs) == 0 {
		return nil
	}
	sp, err := s.Resolve(name)
	if err != nil {
		return err
	}
	if !sp.Vision {
		how := fmt.Sprintf(`set "vision": true in its profile in %s`, ConfigPath(s.getenv))
		if _, ok := s.Profiles[sp.Label]; !ok {
			how = fmt.Sprintf(`make it a profile with "vision": true in %s, e.g. {"profiles": {"vision": {"provider": %q, "model": %q, "vision": true}}}, and choose that profile`,
				ConfigPath(s.getenv), first(s.providerOf(sp.Label), sp.Provider), sp.Model)
		}
		return fmt.Errorf("the model %s is not configured to take images; if it is a vision model, %s; otherwise describe the image in words", sp.Label, how)
	}
	total := 0
	for i, img := range imgs {
		which := fmt.Sprintf("image %d", i+1)
		if len(imgs) == 1 {
			which = "the image"
		}
		if !slices.Contains(ImageMIMETypes, img.MIMEType) {
			return fmt.Errorf("%s is %q; the models take %s", which, img.MIMEType, strings.Join(ImageMIMETypes, ", "))
		}
		if len(img.Data) > MaxImageBytes {
			return fmt.Errorf("%s is %.1f MiB, over the limit of %d MiB an image; send a smaller one", which, float64(len(img.Data))/(1<<20), MaxImageBytes>>20)
		}
		total += len(img.Data)
	}
	if total > MaxImagesBytes {
		return fmt.Errorf("the images are %.1f MiB in all, over the limit of %d MiB a prompt; send fewer or smaller ones", float64(total)/(1<<20), MaxImagesBytes>>20)
	}
	return nil
}

// providerOf is the provider part of "provider:model" ("" otherwise).
func (s *Settings) providerOf(name string) string {
	if i := strings.IndexAny(name, ":/"); i > 0 {
		return name[:i]
	}
	return ""
}

func (s *Settings) getenv(k string) string {
	if s.Getenv == nil {
		return os.Getenv(k)
	}
	return s.Getenv(k)
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Provider builds the provider of sp.
func (s *Settings) Provider(sp *Spec) Provider {
	hc := s.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	hb := httpBase{name: sp.Provider, baseURL: sp.BaseURL, client: hc, timeout: sp.Timeout, idle: sp.Idle, now: time.Now, keyEnv: sp.APIKeyEnv}
	if sp.APIKeyEnv != "" {
		hb.key = s.getenv(sp.APIKeyEnv)
	}
	if sp.Provider == ProviderAnthropic {
		return &anthropic{httpBase: hb}
	}
	return &openAI{httpBase: hb, structured: sp.Structured}
}

// Client returns a client for the named model ("" = default).
func (s *Settings) Client(name string) (*Client, error) {
	sp, err := s.Resolve(name)
	if err != nil {
		return nil, err
	}
	costs := s.Costs
	if costs == nil {
		costs = NewCostTable(nil)
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Client{Provider: s.Provider(sp), Spec: *sp, Costs: costs, Retry: s.Retry, Logger: log}, nil
}
