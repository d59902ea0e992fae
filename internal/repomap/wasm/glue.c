// glue.c: the C side of agentd's repository map.
//
// One call parses one file and writes its syntax tree as a flat array of
// nodes (preorder; each node says where its subtree ends), so the Go side
// walks the tree without calling into C or WebAssembly for every node.
// Function bodies are written as one node with no children: the map lists
// no symbol found inside one, and they are most of a file's nodes.
//
// The same file is built two ways, so every target has the same map:
//   - into parsers.wasm (build.sh): linked with the tree-sitter runtime and
//     every grammar into one wasm32-wasi module that internal/repomap runs
//     with wazero where it is built without cgo (darwin, windows/arm64,
//     CGO_ENABLED=0). One module instance is one parser: the exports below
//     work on one static parser state.
//   - natively, by cgo (../native.go), where a C compiler is at hand
//     (linux/amd64, linux/arm64 and windows/amd64 releases, go build with
//     cgo): the runtime and grammars come from the same pinned Go modules,
//     and each Go worker owns a struct glue.
// TestNativeMatchesWasm checks that both give the same trees.
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tree_sitter/api.h"

#ifdef __wasm__
#define EXPORT(name) __attribute__((export_name(name)))
#else
#define EXPORT(name) static
#endif

// The grammars, in the order of the lang indexes in ../lang.go.
const TSLanguage *tree_sitter_go(void);
const TSLanguage *tree_sitter_javascript(void);
const TSLanguage *tree_sitter_typescript(void);
const TSLanguage *tree_sitter_tsx(void);
const TSLanguage *tree_sitter_python(void);
const TSLanguage *tree_sitter_rust(void);
const TSLanguage *tree_sitter_lua(void);
const TSLanguage *tree_sitter_java(void);
const TSLanguage *tree_sitter_c(void);
const TSLanguage *tree_sitter_cpp(void);

static const TSLanguage *(*const langs[])(void) = {
    tree_sitter_go,     tree_sitter_javascript, tree_sitter_typescript, tree_sitter_tsx,
    tree_sitter_python, tree_sitter_rust,       tree_sitter_lua,        tree_sitter_java,
    tree_sitter_c,      tree_sitter_cpp,
};
#define NLANG (sizeof langs / sizeof langs[0])

#ifdef __wasm__
// cancelled asks the host whether the parse's context is done.
__attribute__((import_module("agentd"), import_name("cancelled"))) int32_t host_cancelled(void);
#endif

// node is one visible node of the tree: named, or anonymous but held in a
// field. field's high bit says named; next is the index after its subtree.
typedef struct {
  uint16_t kind;
  uint16_t field;
  uint32_t start, end, row, next;
} node;

// glue is one parser's state: one file at a time.
typedef struct glue {
  TSParser *parser;
  const char *in;
  char *in_buf;
  uint32_t in_cap, in_len;
  node *out;
  uint32_t out_len, out_cap;
  int32_t *stack;
  // kinds[d] is the kind of the node at depth d on the cursor's path.
  TSSymbol *kinds;
  uint32_t stack_cap;
  // cancel is set (natively, from another thread) to stop the parse.
  int32_t cancel;
} glue;

// The bodies of functions are not written out: no symbol of the map is
// found inside one, and they hold most of a file's nodes. skip[l] marks the
// function-like kinds of language l; body[l] is its "body" field.
static const char *const function_kinds[] = {
    "function_definition", "function_declaration", "method_declaration", "function_item",
    "method_definition", "constructor_declaration", "compact_constructor_declaration",
    "arrow_function", "function_expression", "function", "generator_function",
    "generator_function_declaration", "func_literal", "closure_expression", "lambda",
    "lambda_expression",
};
static bool *skip[NLANG];
static TSFieldId body[NLANG];
static uint32_t nsym[NLANG];

static bool init_skip(uint32_t l) {
  if (skip[l]) return true;
  const TSLanguage *lang = langs[l]();
  uint32_t n = ts_language_symbol_count(lang);
  bool *s = calloc(n ? n : 1, sizeof(bool));
  if (!s) return false;
  for (uint32_t id = 0; id < n; id++) {
    const char *name = ts_language_symbol_name(lang, (TSSymbol)id);
    if (!name || ts_language_symbol_type(lang, (TSSymbol)id) != TSSymbolTypeRegular) continue;
    for (size_t k = 0; k < sizeof function_kinds / sizeof function_kinds[0]; k++) {
      if (strcmp(name, function_kinds[k]) == 0) s[id] = true;
    }
  }
  body[l] = ts_language_field_id_for_name(lang, "body", 4);
  nsym[l] = n;
  skip[l] = s;
  return true;
}

EXPORT("langs") uint32_t export_langs(void) { return NLANG; }
EXPORT("symbol_count") uint32_t export_symbol_count(uint32_t l) {
  return l < NLANG ? ts_language_symbol_count(langs[l]()) : 0;
}
EXPORT("symbol_name") const char *export_symbol_name(uint32_t l, uint32_t id) {
  return l < NLANG ? ts_language_symbol_name(langs[l](), (TSSymbol)id) : NULL;
}
EXPORT("field_count") uint32_t export_field_count(uint32_t l) {
  return l < NLANG ? ts_language_field_count(langs[l]()) : 0;
}
EXPORT("field_name") const char *export_field_name(uint32_t l, uint32_t id) {
  return l < NLANG ? ts_language_field_name_for_id(langs[l](), (TSFieldId)id) : NULL;
}

static const char *read_input(void *payload, uint32_t i, TSPoint p, uint32_t *n) {
  glue *g = payload;
  (void)p;
  if (i >= g->in_len) {
    *n = 0;
    return "";
  }
  *n = g->in_len - i;
  return g->in + i;
}

static bool progress(TSParseState *s) {
#ifdef __wasm__
  (void)s;
  return host_cancelled() != 0;
#else
  glue *g = s->payload;
  return __atomic_load_n(&g->cancel, __ATOMIC_RELAXED) != 0;
#endif
}

static int32_t emit(glue *g, TSTreeCursor *c) {
  TSNode n = ts_tree_cursor_current_node(c);
  TSFieldId f = ts_tree_cursor_current_field_id(c);
  bool named = ts_node_is_named(n);
  if (!named && f == 0) return -1;
  if (g->out_len == g->out_cap) {
    uint32_t cap = g->out_cap ? g->out_cap * 2 : 4096;
    node *o = realloc(g->out, cap * sizeof(node));
    if (!o) return -2;
    g->out = o;
    g->out_cap = cap;
  }
  node *o = &g->out[g->out_len];
  o->kind = ts_node_symbol(n);
  o->field = (uint16_t)(f | (named ? 0x8000 : 0));
  o->start = ts_node_start_byte(n);
  o->end = ts_node_end_byte(n);
  o->row = ts_node_start_point(n).row;
  o->next = 0;
  return (int32_t)g->out_len++;
}

static bool push(glue *g, uint32_t depth, int32_t v, TSSymbol kind) {
  if (depth >= g->stack_cap) {
    uint32_t cap = g->stack_cap ? g->stack_cap * 2 : 256;
    int32_t *s = realloc(g->stack, cap * sizeof(int32_t));
    if (!s) return false;
    g->stack = s;
    TSSymbol *k = realloc(g->kinds, cap * sizeof(TSSymbol));
    if (!k) return false;
    g->kinds = k;
    g->stack_cap = cap;
  }
  g->stack[depth] = v;
  g->kinds[depth] = kind;
  return true;
}

// descend says whether the node under the cursor (at depth) is walked
// into: not when it is the body of a function.
static bool descend(glue *g, uint32_t l, TSTreeCursor *c, uint32_t depth) {
  if (depth == 0 || body[l] == 0) return true;
  TSSymbol parent = g->kinds[depth - 1];
  if (parent >= nsym[l] || !skip[l][parent]) return true;
  return ts_tree_cursor_current_field_id(c) != body[l];
}

// glue_parse parses the n bytes at src as language l and returns the
// number of nodes written to g->out: -1 when cancelled, -2 on a bad
// language or no memory. src is read only during the call.
static int32_t glue_parse(glue *g, uint32_t l, const char *src, uint32_t n) {
  if (l >= NLANG) return -2;
  if (!g->parser && !(g->parser = ts_parser_new())) return -2;
  if (!ts_parser_set_language(g->parser, langs[l]())) return -2;
  if (!init_skip(l)) return -2;
  g->in = src;
  g->in_len = n;
  TSInput input = {.payload = g, .read = read_input, .encoding = TSInputEncodingUTF8};
  TSParseOptions opts = {.payload = g, .progress_callback = progress};
  TSTree *tree = ts_parser_parse_with_options(g->parser, NULL, input, opts);
  g->in = NULL;
  g->in_len = 0;
  if (!tree) {
    ts_parser_reset(g->parser);
    return -1;
  }
  g->out_len = 0;
  TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(tree));
  int32_t rc = 0;
  uint32_t depth = 0;
  int32_t v = emit(g, &c);
  if (v == -2 || !push(g, 0, v, ts_node_symbol(ts_tree_cursor_current_node(&c)))) {
    rc = -2;
    goto done;
  }
  for (;;) {
    if (descend(g, l, &c, depth) && ts_tree_cursor_goto_first_child(&c)) {
      depth++;
      v = emit(g, &c);
      if (v == -2 || !push(g, depth, v, ts_node_symbol(ts_tree_cursor_current_node(&c)))) {
        rc = -2;
        goto done;
      }
      continue;
    }
    for (;;) {
      if (g->stack[depth] >= 0) g->out[g->stack[depth]].next = g->out_len;
      if (ts_tree_cursor_goto_next_sibling(&c)) {
        v = emit(g, &c);
        if (v == -2) {
          rc = -2;
          goto done;
        }
        g->stack[depth] = v;
        g->kinds[depth] = ts_node_symbol(ts_tree_cursor_current_node(&c));
        break;
      }
      if (depth == 0 || !ts_tree_cursor_goto_parent(&c)) goto done;
      depth--;
    }
  }
done:
  ts_tree_cursor_delete(&c);
  ts_tree_delete(tree);
  return rc < 0 ? rc : (int32_t)g->out_len;
}

#ifdef __wasm__
// The module's one parser.
static glue the;

// input returns a buffer of n bytes for the next parse's source.
EXPORT("input") char *export_input(uint32_t n) {
  if (n > the.in_cap || !the.in_buf) {
    free(the.in_buf);
    the.in_cap = n ? n : 1;
    the.in_buf = malloc(the.in_cap);
    if (!the.in_buf) the.in_cap = 0;
  }
  the.in_len = n;
  return the.in_buf;
}

EXPORT("output") node *export_output(void) { return the.out; }

// parse parses the input as language l and returns the number of nodes
// written to output(): -1 when the host cancelled, -2 on a bad language or
// no memory.
EXPORT("parse") int32_t export_parse(uint32_t l) {
  return glue_parse(&the, l, the.in_buf, the.in_len);
}
#else
// glue_init prepares every language's tables before parsers run on many
// threads (init_skip is not safe to race): 0 on success.
static int glue_init(void) {
  for (uint32_t l = 0; l < NLANG; l++) {
    if (!init_skip(l)) return -1;
  }
  return 0;
}

static glue *glue_new(void) { return calloc(1, sizeof(glue)); }

static void glue_free(glue *g) {
  if (!g) return;
  if (g->parser) ts_parser_delete(g->parser);
  free(g->in_buf);
  free(g->out);
  free(g->stack);
  free(g->kinds);
  free(g);
}
#endif
