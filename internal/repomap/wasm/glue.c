// glue.c: the WebAssembly side of agentd's repository map.
//
// It is linked with the tree-sitter runtime and every grammar the map knows
// into one wasm32-wasi module (internal/repomap/parsers.wasm, built by
// build.sh), which internal/repomap runs with wazero on every target. One
// call parses one file and writes its syntax tree as a flat array of nodes
// (preorder; each node says where its subtree ends), so the Go side walks
// the tree without calling back into WebAssembly for every node. Function
// bodies are written as one node with no children: the map lists no symbol
// found inside one, and they are most of a file's nodes.
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tree_sitter/api.h"

#define EXPORT(name) __attribute__((export_name(name)))

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

// cancelled asks the host whether the parse's context is done.
__attribute__((import_module("agentd"), import_name("cancelled"))) int32_t host_cancelled(void);

// node is one visible node of the tree: named, or anonymous but held in a
// field. field's high bit says named; next is the index after its subtree.
typedef struct {
  uint16_t kind;
  uint16_t field;
  uint32_t start, end, row, next;
} node;

static TSParser *parser;
static char *in;
static uint32_t in_cap, in_len;
static node *out;
static uint32_t out_len, out_cap;
static int32_t *stack;
static uint32_t stack_cap;

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

// kinds[d] is the kind of the node at depth d on the cursor's path.
static TSSymbol *kinds;
static uint32_t kinds_cap;

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

// input returns a buffer of n bytes for the next parse's source.
EXPORT("input") char *export_input(uint32_t n) {
  if (n > in_cap || !in) {
    free(in);
    in_cap = n ? n : 1;
    in = malloc(in_cap);
    if (!in) in_cap = 0;
  }
  in_len = n;
  return in;
}

EXPORT("output") node *export_output(void) { return out; }

static const char *read_input(void *payload, uint32_t i, TSPoint p, uint32_t *n) {
  (void)payload;
  (void)p;
  if (i >= in_len) {
    *n = 0;
    return "";
  }
  *n = in_len - i;
  return in + i;
}

static bool progress(TSParseState *s) {
  (void)s;
  return host_cancelled() != 0;
}

static int32_t emit(TSTreeCursor *c) {
  TSNode n = ts_tree_cursor_current_node(c);
  TSFieldId f = ts_tree_cursor_current_field_id(c);
  bool named = ts_node_is_named(n);
  if (!named && f == 0) return -1;
  if (out_len == out_cap) {
    uint32_t cap = out_cap ? out_cap * 2 : 4096;
    node *o = realloc(out, cap * sizeof(node));
    if (!o) return -2;
    out = o;
    out_cap = cap;
  }
  node *o = &out[out_len];
  o->kind = ts_node_symbol(n);
  o->field = (uint16_t)(f | (named ? 0x8000 : 0));
  o->start = ts_node_start_byte(n);
  o->end = ts_node_end_byte(n);
  o->row = ts_node_start_point(n).row;
  o->next = 0;
  return (int32_t)out_len++;
}

static bool push(uint32_t depth, int32_t v, TSSymbol kind) {
  if (depth >= stack_cap) {
    uint32_t cap = stack_cap ? stack_cap * 2 : 256;
    int32_t *s = realloc(stack, cap * sizeof(int32_t));
    if (!s) return false;
    stack = s;
    TSSymbol *k = realloc(kinds, cap * sizeof(TSSymbol));
    if (!k) return false;
    kinds = k;
    stack_cap = cap;
  }
  stack[depth] = v;
  kinds[depth] = kind;
  return true;
}

// descend says whether the node under the cursor (at depth) is walked
// into: not when it is the body of a function.
static bool descend(uint32_t l, TSTreeCursor *c, uint32_t depth) {
  if (depth == 0 || body[l] == 0) return true;
  TSSymbol parent = kinds[depth - 1];
  if (parent >= nsym[l] || !skip[l][parent]) return true;
  return ts_tree_cursor_current_field_id(c) != body[l];
}

// parse parses the input as language l and returns the number of nodes
// written to output(): -1 when the host cancelled, -2 on a bad language or
// no memory.
EXPORT("parse") int32_t export_parse(uint32_t l) {
  if (l >= NLANG) return -2;
  if (!parser && !(parser = ts_parser_new())) return -2;
  if (!ts_parser_set_language(parser, langs[l]())) return -2;
  if (!init_skip(l)) return -2;
  TSInput input = {.payload = NULL, .read = read_input, .encoding = TSInputEncodingUTF8};
  TSParseOptions opts = {.payload = NULL, .progress_callback = progress};
  TSTree *tree = ts_parser_parse_with_options(parser, NULL, input, opts);
  if (!tree) {
    ts_parser_reset(parser);
    return -1;
  }
  out_len = 0;
  TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(tree));
  int32_t rc = 0;
  uint32_t depth = 0;
  int32_t v = emit(&c);
  if (v == -2 || !push(0, v, ts_node_symbol(ts_tree_cursor_current_node(&c)))) {
    rc = -2;
    goto done;
  }
  for (;;) {
    if (descend(l, &c, depth) && ts_tree_cursor_goto_first_child(&c)) {
      depth++;
      v = emit(&c);
      if (v == -2 || !push(depth, v, ts_node_symbol(ts_tree_cursor_current_node(&c)))) {
        rc = -2;
        goto done;
      }
      continue;
    }
    for (;;) {
      if (stack[depth] >= 0) out[stack[depth]].next = out_len;
      if (ts_tree_cursor_goto_next_sibling(&c)) {
        v = emit(&c);
        if (v == -2) {
          rc = -2;
          goto done;
        }
        stack[depth] = v;
        kinds[depth] = ts_node_symbol(ts_tree_cursor_current_node(&c));
        break;
      }
      if (depth == 0 || !ts_tree_cursor_goto_parent(&c)) goto done;
      depth--;
    }
  }
done:
  ts_tree_cursor_delete(&c);
  ts_tree_delete(tree);
  return rc < 0 ? rc : (int32_t)out_len;
}
