/*
 * Not from a project: the older provider style systemtap's dtrace still
 * accepts (see README), in one file: no ";" after a probe or after the
 * provider's "}", and "#" comment lines that are not directives.
 */
# probes of the request path
provider oldstyle {
	# file: src/server.c
	probe request__start(const char *path, int fd)
	probe request__done(const char *path, int fd, long status)
	probe tick()
	#	a comment line indented with a tab
	probe last(unsigned int n);
}
