// expect: void_arg.d:3: error: argument type "void" has no value; write "()" or "(void)" for a probe without arguments, or "void *" for a pointer
provider p {
	probe v(int a, void);
};
