package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/session"
)

// keepInvalidPlan saves the plan the model could not repair (re) in the
// workspace's journal, beside the plans made from requests but apart from
// them (journal/invalid-plans/, never read as a plan), and says where and
// how to go on: fix the problems printed above it, validate, run. The plan
// is the user's to fix, not thrown away.
func keepInvalidPlan(cmd, request, root, stateDir string, re *llm.RepairError, stderr io.Writer) {
	if re == nil || re.Text == "" {
		return
	}
	j, err := session.OpenJournal(stateDir, root, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: the model's plan could not be kept: %v\n", cmd, err)
		return
	}
	data := []byte(re.Text)
	var v any
	if json.Unmarshal(data, &v) == nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if enc.Encode(v) == nil {
			data = b.Bytes()
		}
	}
	path := filepath.Join(j.Dir(), "invalid-plans", requestPlanID(request, time.Now())+".json")
	err = os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: the model's plan could not be kept: %v\n", cmd, err)
		return
	}
	fmt.Fprintf(stderr, "agentd %s: the model's plan is kept in %s: fix the problems above in it, check it with %s and run it with %s\n",
		cmd, shq(path), hintCommand("", "", "validate", path), hintCommand(root, stateDir, "run", path))
}
