// expect: unclosed.d:4: error: expected "probe" or "}" in the provider block, found end of file
provider p {
	probe one(int x);
