// expect: no_semicolon.d:4: error: expected ";" after the probe declaration, found "probe"
provider p {
	probe one(int x)
	probe two(int x);
};
