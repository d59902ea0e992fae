#include <stdio.h>
#define BUF_SIZE 64
struct buffer { int len; };
typedef struct buffer buffer_t;
static int counter;
int buffer_push(struct buffer *b, int v) { return b->len++; }
void buffer_reset(struct buffer *b);
