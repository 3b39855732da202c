// expect: missing_name.d:2: error: expected a provider name after "provider", found "{"
provider {
	probe v(int a);
};
