package main

import (
	"fmt"
	"io"

	"github.com/agentd/agentd/session"
)

// chatModelReady reports whether chat has a model to plan with (the --model
// flag, AGENTD_MODEL or the config files, with its key). Every turn of a
// chat asks the model for a plan, so without one chat refuses at start,
// saying how to configure one, instead of starting a conversation whose
// every turn fails.
func chatModelReady(root, model string, stderr io.Writer) bool {
	models, err := session.LoadModels(session.ModelOptions{Root: root, Model: model})
	if err == nil {
		_, err = models.Settings.Resolve("")
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentd chat: every turn asks a model for a plan, and there is none to ask: %v\n", err)
		return false
	}
	return true
}
