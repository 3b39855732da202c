// expect: duplicate.d:4: error: probe "x" is declared twice in provider "p" (first at line 3)
provider p {
	probe x(int a);
	probe x(int b);
};
