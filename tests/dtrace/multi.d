provider first {
	probe a(int x);
	probe b__c();
}
provider second {
	probe a(const char *s);
};
