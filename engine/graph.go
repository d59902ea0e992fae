package engine

// The dependency graph: nodes rebuilt from the current plan version.

// rebuild makes the graph match s.plan: nodes of steps that still exist
// keep their state; steps that have not started are re-evaluated in
// dependency order (a blocked step whose dependency is retried becomes
// pending again).
func (s *sched) rebuild() {
	old := s.byID
	s.byID = make(map[string]*node, len(s.plan.Steps))
	s.nodes = make([]*node, 0, len(s.plan.Steps))
	for i, st := range s.plan.Steps {
		n := old[st.ID]
		if n == nil {
			n = &node{st: StepState{ID: st.ID, Status: StepPending}}
		}
		n.step, n.idx = st, i
		n.deps, n.dependents, n.badDeps = nil, nil, nil
		s.byID[st.ID] = n
		s.nodes = append(s.nodes, n)
	}
	for _, n := range s.nodes {
		for _, id := range n.step.DependsOn {
			d := s.byID[id]
			if d == nil {
				n.badDeps = append(n.badDeps, id)
				continue
			}
			n.deps = append(n.deps, d)
			d.dependents = append(d.dependents, n)
		}
	}
	clear(s.counts)
	clear(s.current)
	for _, n := range s.nodes {
		s.counts[n.st.Status]++
		if isActive(n.st.Status) {
			s.current[n] = struct{}{}
		}
	}
	s.ready = s.ready[:0]
	for _, n := range topoOrder(s.nodes) {
		switch n.st.Status {
		case StepReady:
			// Re-queue: the heap was cleared.
			s.counts[StepReady]--
			s.counts[StepPending]++
			n.st.Status = StepPending
			s.evaluate(n)
		case StepPending, StepBlocked:
			s.evaluate(n)
		}
	}
}

// topoOrder returns nodes dependencies first (Kahn); nodes on cycles come
// last in plan order.
func topoOrder(nodes []*node) []*node {
	indeg := make(map[*node]int, len(nodes))
	for _, n := range nodes {
		indeg[n] = len(n.deps)
	}
	order := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		if indeg[n] == 0 {
			order = append(order, n)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, d := range order[i].dependents {
			indeg[d]--
			if indeg[d] == 0 {
				order = append(order, d)
			}
		}
	}
	if len(order) < len(nodes) {
		for _, n := range nodes {
			if indeg[n] > 0 {
				order = append(order, n)
			}
		}
	}
	return order
}
