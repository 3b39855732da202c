// expect: struct_value.d:3: error: argument type "struct foo" is a struct passed by value; pass a pointer to it
provider p {
	probe s(struct foo f);
};
