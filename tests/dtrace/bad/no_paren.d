// expect: no_paren.d:3: error: expected "(" after the probe name, found "int"
provider p {
	probe broken int x);
};
