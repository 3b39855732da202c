// expect: too_many.d:3: error: probe "many" has more than 12 arguments (the USDT limit)
provider p {
	probe many(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j, int k, int l, int m);
};
