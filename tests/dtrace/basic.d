/*
 * The shape most projects use: one provider, comments of both kinds,
 * #pragma D attributes lines, double underscores in probe names.
 */
#pragma D attributes Evolving/Evolving/Common provider basic provider
#pragma D attributes Private/Private/Unknown provider basic module
#pragma D attributes Evolving/Evolving/Common provider basic args

provider basic {
	/** Fired when a transaction starts. @param id the id */
	probe transaction__start(int id);   // trailing comment
	probe transaction__done(int id, const char *status);
	probe tick();
	probe idle(void);
	probe
	    spread_over_lines(
	        unsigned int a,
	        long b
	    );
};
