package session

import "github.com/agentd/agentd/engine/llm"

// CheckImages says whether imgs may go to the model in force
// (llm.Settings.CheckImages: a model configured with vision; the error
// says how to configure one), as the planner itself refuses them; an
// editor's image chip asks it before sending (ContextSizes).
func (w *ModelSwitch) CheckImages(imgs []Image) error {
	m, err := w.current()
	if err != nil {
		return err
	}
	if !m.Configured() {
		return noModel()
	}
	return m.Settings.CheckImages(plannerModel(m.Planner), imgs)
}

// plannerModel is the model name the planner calls ("" = the default).
func plannerModel(p *llm.Planner) string {
	if p == nil {
		return ""
	}
	return p.Model
}
