package repomap

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// DefaultTokens is the map's default token budget.
const DefaultTokens = 2000

// Query is what the map is ranked for.
type Query struct {
	// Request is the user's request; the symbols, files and words it names
	// rank first.
	Request string
	// Focus are workspace-relative paths the user is looking at (the
	// selection's file, the open buffers), ranked first as well.
	Focus []string
	// Tokens is the budget of the rendered map (default DefaultTokens; a
	// token is taken as 4 characters).
	Tokens int
}

// Entry is one ranked file.
type Entry struct {
	Path    string
	Score   float64
	Symbols []Symbol
}

// Rank returns the files ranked for q, best first (only files with
// symbols, or that q names).
//
// Files not parsed yet (a big tree is parsed lazily) are parsed when the
// ranking needs them: the best candidates by their paths and the
// request's identifiers they use, and the files that end up listed.
func (m *Map) Rank(ctx context.Context, q Query) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rank(ctx, q)
}

// Render returns the map ranked for q and cut to q.Tokens, as the model
// sees it, and the paths it lists.
func (m *Map) Render(ctx context.Context, q Query) (string, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	entries, err := m.rank(ctx, q)
	if err != nil {
		return "", nil, err
	}
	// The files that will be listed get their symbols.
	var show []*file
	for i, e := range entries {
		if i >= 80 {
			break
		}
		show = append(show, m.files[e.Path])
	}
	if err := m.parse(ctx, show); err != nil {
		return "", nil, err
	}
	for i := range entries[:min(len(entries), 80)] {
		if f := m.files[entries[i].Path]; f != nil && f.Tags != nil && entries[i].Symbols == nil {
			entries[i].Symbols = f.Tags.Syms
		}
	}
	text, listed := render(entries, q.Tokens, len(m.files))
	return text, listed, nil
}

// maxCandidates bounds the files parsed for one ranking before scoring.
const maxCandidates = 150

// candidates are the files worth parsing for q in a tree not all parsed:
// the focus, the files the request names, and the files using the
// request's identifiers (rare ones weigh more).
func (m *Map) candidates(q Query, terms requestTerms) []*file {
	ids := map[uint32]int{} // request identifier hash -> files using it
	filter := new(bitset)
	for id := range terms.idents {
		h := identHash(id)
		ids[h] = 0
		filter.add(h)
	}
	want := sortedKeys(ids)
	focus := map[string]bool{}
	for _, p := range q.Focus {
		focus[p] = true
	}
	type cand struct {
		f    *file
		s    float64
		uses []uint32
	}
	var cs []cand
	unparsed := false
	uses := m.matcher(want, filter)
	for p, f := range m.files {
		if f.Tags == nil {
			continue
		}
		unparsed = unparsed || !f.Tags.Parsed
		c := cand{f: f}
		if focus[p] {
			c.s += 100
		}
		if terms.mayName(f.lowerPath()) {
			for _, w := range f.pathWords() {
				if terms.words[w] {
					c.s += 3
				}
			}
		}
		if len(ids) > 0 {
			uses(f.Tags, func(id uint32) {
				ids[id]++
				c.uses = append(c.uses, id)
			})
		}
		if c.s > 0 || len(c.uses) > 0 {
			cs = append(cs, c)
		}
	}
	if !unparsed {
		return nil
	}
	if len(cs) == 0 {
		return m.nearRoot()
	}
	n := float64(len(m.files) + 1)
	for i := range cs {
		for _, id := range cs[i].uses {
			cs[i].s += math.Log(n / float64(ids[id]+1))
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].s != cs[j].s {
			return cs[i].s > cs[j].s
		}
		return cs[i].f.Path < cs[j].f.Path
	})
	// The best candidates, parsed or not: parse skips those already parsed,
	// so the same request parses nothing the second time.
	var out []*file
	for i := 0; i < len(cs) && i < maxCandidates; i++ {
		out = append(out, cs[i].f)
	}
	return out
}

// nearRoot is what a ranking parses when nothing points anywhere (no
// request, or one that names nothing in the code, and no focus) on a tree
// too big to have been parsed whole: the maxCandidates source files
// nearest the root, in path order, so the map still gives an overview of
// the project (the prior then ranks them) rather than listing nothing.
func (m *Map) nearRoot() []*file {
	var fs []*file
	for _, f := range m.files {
		if f.Tags != nil {
			fs = append(fs, f)
		}
	}
	depth := func(f *file) int { return strings.Count(f.Path, "/") }
	sort.Slice(fs, func(i, j int) bool {
		if di, dj := depth(fs[i]), depth(fs[j]); di != dj {
			return di < dj
		}
		return fs[i].Path < fs[j].Path
	})
	return fs[:min(len(fs), maxCandidates)]
}

type requestTerms struct {
	idents map[string]bool // identifiers as written
	lower  map[string]bool // identifiers lower-cased
	words  map[string]bool // stemmed lower-case words (from identifiers split)
	text   string          // the request lower-cased
	// needles: a text that none of them is in (ignoring ASCII case) has
	// none of the words nor the identifiers above (see mayName).
	needles []string
	anyName bool // no quick test: every text may match
}

// mayName reports whether lower (a lower-cased path or name) may hold one
// of the request's words or identifiers. A word is a run of a name's
// letters, lower-cased and stemmed: its stem is in the text, but for
// the y that stems "ies" end with.
func (t *requestTerms) mayName(lower string) bool {
	if t.anyName {
		return true
	}
	for _, n := range t.needles {
		if strings.Contains(lower, n) {
			return true
		}
	}
	return false
}

// mayNameFold is mayName for a name not lower-cased.
func (t *requestTerms) mayNameFold(name string) bool {
	if t.anyName || len(t.needles) == 0 {
		return t.anyName
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 0x80 {
			return true // non-ASCII: case folding beyond the quick test
		} else if 'A' <= c && c <= 'Z' {
			return t.mayName(strings.ToLower(name))
		}
	}
	return t.mayName(name)
}

// setNeedles makes the quick test of mayName.
func (t *requestTerms) setNeedles() {
	add := func(w string) {
		w = strings.TrimSuffix(w, "y")
		if w == "" {
			t.anyName = true
		}
		for i := 0; i < len(w); i++ {
			if w[i] >= 0x80 {
				t.anyName = true
			}
		}
		t.needles = append(t.needles, w)
	}
	for w := range t.words {
		add(w)
	}
	for w := range t.lower {
		add(w)
	}
}

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and for that this with from into when then than what which where who why how
		add adds make makes use uses used using file files code function functions method methods change changes
		should would could must can not are was were has have had does did its their there here some any all each
		new old now let get set put only also more less very just like about after before over under out our your
		you they them it is be to of in on at by or as an a do if so no yes but fix bug test tests please want need
		go see show shows return returns value values name names call calls type types data way one two`) {
		stopwords[w] = true
	}
}

func parseTerms(req string) requestTerms {
	t := requestTerms{idents: map[string]bool{}, lower: map[string]bool{}, words: map[string]bool{}, text: strings.ToLower(req)}
	ids := identifiers([]byte(req))
	// Two-letter acronyms (GC, IO) name things too; identifiers() skips them.
	for _, f := range strings.FieldsFunc(req, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if len(f) == 2 && isUpper(f) {
			ids = append(ids, f)
		}
	}
	// Qualified names (Store.GC) as written.
	for _, f := range strings.FieldsFunc(req, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:()'\"`", r) }) {
		f = strings.TrimRight(f, ".?!")
		if strings.Count(f, ".") == 1 && !strings.HasPrefix(f, ".") && !strings.HasSuffix(f, ".") && !strings.Contains(f, "/") {
			t.idents[f] = true
		}
	}
	for _, id := range ids {
		if stopwords[strings.ToLower(id)] {
			continue
		}
		t.idents[id] = true
		t.lower[strings.ToLower(id)] = true
		for _, w := range splitWords(id) {
			if !stopwords[w] {
				t.words[w] = true
			}
		}
	}
	t.setNeedles()
	return t
}

// splitWords splits an identifier into lower-case, lightly stemmed words:
// "parseHTTPRequest" -> parse, http, request; "max_delay" -> max, delay.
func splitWords(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) >= 2 {
			out = append(out, stem(strings.ToLower(string(cur))))
		}
		cur = cur[:0]
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '.' || r == '$' || r == '-' || r == '/' || unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r):
			// a new word starts at an upper-case letter that follows a
			// lower-case one, or that precedes one (HTTPRequest).
			if len(cur) > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				flush()
			}
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

func stem(w string) string {
	for _, suf := range []string{"ing", "ies", "es", "ed", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			if suf == "ies" {
				w += "y"
			}
			break
		}
	}
	return w
}

func lastName(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func (m *Map) rank(ctx context.Context, q Query) ([]Entry, error) {
	terms := parseTerms(q.Request)
	if err := m.parse(ctx, m.candidates(q, terms)); err != nil {
		return nil, err
	}
	focus := map[string]bool{}
	for _, p := range q.Focus {
		focus[p] = true
	}
	// How many files define each name the request mentions, so a name
	// defined everywhere counts for little.
	definers := map[string]int{}
	for _, f := range m.files {
		if f.Tags == nil {
			continue
		}
		for _, s := range f.Tags.Syms {
			if n := lastName(s.Name); terms.mayNameFold(n) && terms.lower[strings.ToLower(n)] {
				definers[strings.ToLower(n)]++
			}
		}
	}
	score := make(map[string]float64, 64)
	for p, f := range m.files {
		sc := 0.0
		if focus[p] {
			sc += 100
		}
		lp := f.lowerPath()
		base := path.Base(lp)
		if strings.Contains(terms.text, lp) {
			sc += 80
		} else if strings.Contains(terms.text, base) && strings.Contains(base, ".") {
			sc += 40
		}
		if terms.mayName(lp) {
			for _, w := range f.pathWords() {
				if terms.words[w] {
					sc += 2
				}
			}
		}
		if f.Tags != nil {
			for k, s := range f.Tags.Syms {
				n := lastName(s.Name)
				if !terms.mayNameFold(n) {
					continue // neither its name nor its words are the request's
				}
				sw := f.Tags.symWord(k)
				ln := sw.lower
				if terms.lower[ln] {
					w := 30.0
					if terms.idents[n] {
						w = 50
					}
					if terms.idents[s.Name] || strings.Contains(terms.text, strings.ToLower(s.Name)) && strings.Contains(s.Name, ".") {
						w += 20
					}
					sc += w / float64(max(definers[ln], 1))
					continue
				}
				ws := sw.words
				hit := 0
				for _, w := range ws {
					if terms.words[w] {
						hit++
					}
				}
				if hit > 0 {
					sc += 1.5 * float64(hit*hit) / float64(len(ws))
				}
			}
		}
		if sc > 0 {
			score[p] = sc
		}
	}
	// Seeds: the best files so far; their neighbours share their score.
	type ps struct {
		p string
		s float64
	}
	var seeds []ps
	for p, s := range score {
		seeds = append(seeds, ps{p, s})
	}
	sort.Slice(seeds, func(i, j int) bool {
		if seeds[i].s != seeds[j].s {
			return seeds[i].s > seeds[j].s
		}
		return seeds[i].p < seeds[j].p
	})
	if len(seeds) > 12 {
		seeds = seeds[:12]
	}
	if len(seeds) > 0 {
		m.spread(seeds[0].s, func(yield func(string, float64) bool) {
			for _, sd := range seeds {
				if !yield(sd.p, sd.s) {
					return
				}
			}
		}, score)
	}
	// A small prior: files with more symbols, nearer the root.
	out := make([]Entry, 0, len(m.files))
	for p, f := range m.files {
		var syms []Symbol
		if f.Tags != nil {
			syms = f.Tags.Syms
		}
		sc := score[p]
		if len(syms) == 0 && sc == 0 {
			continue
		}
		sc += 0.02*float64(min(len(syms), 25)) - 0.05*float64(strings.Count(p, "/"))
		out = append(out, Entry{Path: p, Score: sc, Symbols: syms})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Path < out[j].Path
	})
	// Within a file, the symbols the request names come first.
	for i, e := range out {
		if e.Score < 1 {
			break
		}
		f := m.files[e.Path]
		if f == nil || f.Tags == nil || len(e.Symbols) == 0 {
			continue
		}
		hits := make([]int, len(e.Symbols))
		hit := false
		for k, s := range e.Symbols {
			if terms.mayNameFold(lastName(s.Name)) {
				hits[k] = symHit(terms, f.Tags.symWord(k))
				hit = hit || hits[k] > 0
			}
		}
		if !hit {
			continue
		}
		order := make([]int, len(e.Symbols))
		for k := range order {
			order[k] = k
		}
		sort.SliceStable(order, func(a, b int) bool { return hits[order[a]] > hits[order[b]] })
		syms := make([]Symbol, len(order))
		for k, o := range order {
			syms[k] = e.Symbols[o]
		}
		out[i].Symbols = syms
	}
	return out, nil
}

// symHit is how much a symbol (its words, symWords) matches the request.
func symHit(t requestTerms, sw symWords) int {
	if t.lower[sw.lower] {
		return 10
	}
	hit := 0
	for _, w := range sw.words {
		if t.words[w] {
			hit++
		}
	}
	return hit
}

// spread gives the files that the seeds reference (the definers of the
// identifiers a seed uses) and the files that reference the seeds (use a
// name a seed defines) part of the seed's score.
func (m *Map) spread(top float64, seeds func(func(string, float64) bool), score map[string]float64) {
	add := map[string]float64{}
	want := map[uint32]float64{} // identifier hash -> weight of referencing it
	type use struct {
		seed string
		w    float64
	}
	uses := map[uint32][]use{} // identifier hash -> the seeds that use it
	for p, s := range seeds {
		f := m.files[p]
		if f == nil || f.Tags == nil {
			continue
		}
		w := s / top
		for _, id := range f.Tags.Idents {
			uses[id] = append(uses[id], use{p, w})
		}
		// Referencing the seed: files that use the names it defines.
		for _, sym := range f.Tags.Syms {
			id := identHash(lastName(sym.Name))
			want[id] = max(want[id], w)
		}
	}
	// Referenced by a seed: the definers of the identifiers it uses.
	defs := map[uint32][]string{}
	for q, g := range m.files {
		if g.Tags == nil {
			continue
		}
		for _, sym := range g.Tags.Syms {
			if n := identHash(lastName(sym.Name)); uses[n] != nil {
				defs[n] = append(defs[n], q)
			}
		}
	}
	for n, files := range defs {
		if len(files) > 8 {
			continue // a common name says little
		}
		for _, u := range uses[n] {
			for _, q := range files {
				if q != u.seed {
					add[q] += 4 * u.w / float64(len(files))
				}
			}
		}
	}
	filter := new(bitset)
	for id := range want {
		filter.add(id)
	}
	wantIDs := sortedKeys(want)
	using := m.matcher(wantIDs, filter)
	for q, g := range m.files {
		if g.Tags == nil {
			continue
		}
		sum := 0.0
		using(g.Tags, func(id uint32) { sum += want[id] })
		if sum > 0 {
			add[q] += min(sum, 5)
		}
	}
	for q, a := range add {
		score[q] += a
	}
}

// charsPerToken is how the map counts tokens: a token is taken as 4
// characters.
const charsPerToken = 4

// Budget is the budget in tokens a Query's Tokens stands for (0 or less:
// DefaultTokens).
func Budget(tokens int) int {
	if tokens <= 0 {
		return DefaultTokens
	}
	return tokens
}

// TokensOf is the size of a rendered map in tokens, counted as its budget
// is.
func TokensOf(text string) int {
	return (len(text) + charsPerToken - 1) / charsPerToken
}

// render writes the ranked files and their symbols within tokens.
func render(entries []Entry, tokens, total int) (string, []string) {
	limit := Budget(tokens) * charsPerToken
	var b strings.Builder
	fmt.Fprintf(&b, "Repository map: %d source files; the most relevant first, with their top-level symbols (line kind name).\n", total)
	var listed []string
	for i, e := range entries {
		maxSyms := 8
		if i < 5 {
			maxSyms = 30
		} else if i < 20 {
			maxSyms = 15
		}
		var fb strings.Builder
		fb.WriteString(e.Path + ":\n")
		for k, s := range e.Symbols {
			if k == maxSyms {
				fmt.Fprintf(&fb, "  ... %d more\n", len(e.Symbols)-k)
				break
			}
			fmt.Fprintf(&fb, "  %d %s %s\n", s.Line, s.Kind, s.Name)
		}
		if b.Len()+fb.Len() > limit {
			if b.Len()+len(e.Path)+2 > limit {
				break
			}
			// the file alone, if its symbols do not fit.
			fb.Reset()
			fb.WriteString(e.Path + "\n")
		}
		b.WriteString(fb.String())
		listed = append(listed, e.Path)
	}
	return b.String(), listed
}

// identIndex is the cache file's inverted index of identifiers (see
// persist.go): posts[starts[k]:starts[k+1]] are the contents (indexes in
// contents) using keys[k]. The contents loaded never change (a file that
// changes gets new content), so the index stays true for them; contents
// read since are not in it (tags.ix 0) and are scanned.
type identIndex struct {
	keys, starts, posts []uint32
	contents            []*tags
}

// matcher returns a function that calls fn, in ascending order, for each
// of want (sorted, with filter holding them) that content t uses: looked
// up in the index for contents in it, by scanning the others' identifiers.
func (m *Map) matcher(want []uint32, filter *bitset) func(t *tags, fn func(uint32)) {
	ix := m.ix
	var hits [][]uint32 // by content index
	if ix != nil && len(want) > 0 {
		hits = make([][]uint32, len(ix.contents))
		for _, id := range want {
			k, ok := slices.BinarySearch(ix.keys, id)
			if !ok || k+1 >= len(ix.starts) {
				continue
			}
			lo, hi := ix.starts[k], ix.starts[k+1]
			if lo > hi || int(hi) > len(ix.posts) {
				continue // a damaged index
			}
			for _, c := range ix.posts[lo:hi] {
				if int(c) < len(hits) {
					hits[c] = append(hits[c], id)
				}
			}
		}
	}
	return func(t *tags, fn func(uint32)) {
		if hits != nil && t.ix > 0 && int(t.ix) <= len(hits) {
			for _, id := range hits[t.ix-1] {
				fn(id)
			}
			return
		}
		eachCommon(t.Idents, want, filter, fn)
	}
}

// eachCommon calls fn, in ascending order, for each hash both in idents
// (a file's sorted identifier hashes) and in want (sorted, with filter
// holding them): by binary search for each of want when want is very
// small next to idents, else by a scan of idents behind the filter. A
// scan reads memory in order, a binary search jumps (a cache miss a
// step, the identifiers of a big tree being far bigger than the cache),
// hence the factor 4.
func eachCommon(idents, want []uint32, filter *bitset, fn func(uint32)) {
	if 4*len(want)*bits.Len(uint(len(idents))) < len(idents) {
		rest := idents
		for _, id := range want {
			i, ok := slices.BinarySearch(rest, id)
			if ok {
				fn(id)
			}
			rest = rest[i:]
		}
		return
	}
	for _, id := range idents {
		if filter.has(id) {
			if _, ok := slices.BinarySearch(want, id); ok {
				fn(id)
			}
		}
	}
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// bitset is a quick "maybe" test in front of a sorted list of identifier
// hashes: most identifiers of most files are not in the set.
type bitset [1 << 16 / 64]uint64

func (b *bitset) add(id uint32)      { b[(id&0xffff)>>6] |= 1 << (id & 63) }
func (b *bitset) has(id uint32) bool { return b[(id&0xffff)>>6]&(1<<(id&63)) != 0 }

// pathWords are the words of a file's path (cached: a file record is
// replaced when the file changes).
func (f *file) pathWords() []string {
	if f.words == nil {
		f.words = splitWords(strings.TrimSuffix(f.Path, path.Ext(f.Path)))
		if f.words == nil {
			f.words = []string{}
		}
	}
	return f.words
}

// lowerPath is the path lower-cased (cached as pathWords is).
func (f *file) lowerPath() string {
	if f.lower == "" {
		f.lower = strings.ToLower(f.Path)
	}
	return f.lower
}

type symWords struct {
	made  bool
	lower string   // the last name, lower-cased
	words []string // its words
}

// symWord is the words of symbol k's name, made once per content and
// only for the symbols a ranking looks into.
func (t *tags) symWord(k int) symWords {
	if len(t.words) != len(t.Syms) {
		t.words = make([]symWords, len(t.Syms))
	}
	if w := &t.words[k]; !w.made {
		n := lastName(t.Syms[k].Name)
		*w = symWords{made: true, lower: strings.ToLower(n), words: splitWords(n)}
	}
	return t.words[k]
}
