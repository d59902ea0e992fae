package session

import (
	"errors"
	"testing"
)

// The editor's settings are decoded once, here: a wrong type or an
// unknown review mode names the field; the model reaches the settings.
func TestDecodeEditorSettings(t *testing.T) {
	es, err := DecodeEditorSettings([]byte(`{"stateDir":"/s","allowBroadWorkspace":true,"review":"after","model":{"provider":"openai","model":"gpt-4o"},"clientFeatures":{"changeReview":true}}`), "initializationOptions")
	if err != nil || es.StateDir != "/s" || !es.AllowBroadWorkspace || es.Review != "after" || es.Model == nil || es.Model.Model != "gpt-4o" {
		t.Fatalf("decoded %+v, %v", es, err)
	}
	for raw, field := range map[string]string{
		`{"review":"sometimes"}`: "initializationOptions.review",
		`{"stateDir":3}`:         "initializationOptions.stateDir",
		`{"model":{"model":7}}`:  "initializationOptions.model.model",
	} {
		_, err := DecodeEditorSettings([]byte(raw), "initializationOptions")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v, want an error naming %s", raw, err, field)
		}
	}
	if es, err := DecodeEditorSettings(nil, "initializationOptions"); err != nil || es.Model != nil {
		t.Errorf("no settings: %+v, %v", es, err)
	}
}
