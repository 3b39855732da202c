// expect: bad_arg.d:3: error: expected "," or ")" after the parameter name, found "b"
provider p {
	probe v(int a b);
};
