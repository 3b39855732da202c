// expect: no_semicolon.d:3: error: expected ";" after the probe declaration, found "int"
provider p {
	probe one(int x) int
	probe two(int x);
};
