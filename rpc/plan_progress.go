package rpc

import "encoding/json"

// planProgress reports agentd/plan/create's work ("mapping the
// repository", each read while the model explores) as $/progress on the
// client's workDoneToken. Without a token (or a string one) both
// functions do nothing.
func (s *Server) planProgress(raw json.RawMessage) (report func(string), end func()) {
	var token string
	if len(raw) == 0 || json.Unmarshal(raw, &token) != nil || token == "" {
		return nil, func() {}
	}
	s.sendProgress(token, workDoneProgress{Kind: "begin", Title: "agentd: planning", Message: "reading the request"})
	return func(msg string) {
			s.sendProgress(token, workDoneProgress{Kind: "report", Message: msg})
		}, func() {
			s.sendProgress(token, workDoneProgress{Kind: "end"})
		}
}
