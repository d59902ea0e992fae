package session

import (
	"encoding/json"
	"errors"
)

// EditorSettings are the settings an editor gives when it opens a
// workspace (the editor server's initializationOptions), decoded here, by
// the same package that reads both config files (settings.go), so that a
// setting means the same from an editor as from a file or a flag. What an
// editor can do (its client features) is the wire's, not a setting.
type EditorSettings struct {
	// StateDir, if set, is where the workspace's state goes (a daemon's
	// --state-dir wins over it).
	StateDir string `json:"stateDir"`
	// AllowBroadWorkspace confirms a root that is / or the home directory
	// (CheckPlaces).
	AllowBroadWorkspace bool `json:"allowBroadWorkspace"`
	// Model is the editor's model choice (LoadSettings applies it).
	Model *EditorModel `json:"model"`
	// Approval is no longer a setting: the policy is the workspace's
	// (agentd/policy/set). Kept to say so when an editor still sends it.
	Approval json.RawMessage `json:"approval"`
	// Review is the editor's review mode for runs it starts without one
	// (ParseReview: "before", "after", "none"; "" for StartRun's default).
	Review string `json:"review"`
}

// DecodeEditorSettings decodes an editor's settings (raw: its
// initializationOptions; field names them in errors,
// "initializationOptions") and checks them: a value of the wrong type or
// an unknown review mode is a *FieldError naming the field and what it may
// be.
func DecodeEditorSettings(raw json.RawMessage, field string) (EditorSettings, error) {
	var es EditorSettings
	if len(raw) == 0 || string(raw) == "null" {
		return es, nil
	}
	if err := json.Unmarshal(raw, &es); err != nil {
		f := field
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			f += "." + te.Field
		}
		return es, &FieldError{Field: f, Message: err.Error()}
	}
	if _, err := ParseReview(field+".review", es.Review); err != nil {
		return es, err
	}
	return es, nil
}
