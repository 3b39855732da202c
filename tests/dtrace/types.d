/* Argument types: typedefs, pointers, strings, sizes and signedness. */
typedef struct conn conn_t;            /* a struct: pointers to it are %p */
typedef unsigned long long txid_t;     /* scalar typedef: %llu */
typedef char *name_t;                  /* a char pointer typedef: a string */
typedef int state_t;
struct foo {
	int a;
	char *b;
};
enum color { RED, GREEN };

provider types {
	probe ints(char c, short s, int i, long l, long long ll, signed char sc);
	probe uints(unsigned char c, unsigned short s, unsigned int i, unsigned long l,
		    unsigned long long ll, unsigned u);
	probe fixed(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f,
		    int64_t g, uint64_t h, size_t i, ssize_t j, uintptr_t k, bool m);
	probe strings(char *a, const char *b, unsigned char *c, name_t d, string e);
	probe pointers(void *a, const void *b, struct foo *c, conn_t *d, char **e, int *f, int g[4]);
	probe typedefs(txid_t a, state_t b, enum color c, off_t d, pid_t e, unknown_scalar_t f);
	probe translated(struct foo *f, int x) : (foo_info_t *f, int x);
	probe floating(double d, float f);
	probe unnamed(int, const char *, struct foo *);
	probe twelve(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9,
		     int a10, int a11, int a12);
};
