/* Trace time formatting: see trace_time.h. */
#include "trace_time.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

char *trace_time_put_wall(char *p, int64_t ns, int utc)
{
	/* Floor division, so that times before the epoch still print a valid clock. */
	int64_t sec = ns / 1000000000, frac = ns % 1000000000;
	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	/* localtime_r() takes a lock and reads the zone each call; events come
	 * in time order, so cache the text of the current second (single-threaded
	 * callers: see trace_reader.h). */
	static int64_t cached_sec = INT64_MIN;
	static int cached_utc = -1;
	static char cached_text[64 + STRBUF_PAD];   /* padded: read STRBUF_PAD at a time */
	static size_t cached_len;
	if (sec != cached_sec || utc != cached_utc) {
		time_t t = (time_t)sec;
		struct tm tm;
		if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)))
			return trace_time_put_seconds(p, ns);
		cached_len = strftime(cached_text, 64, "%Y-%m-%d %H:%M:%S", &tm);
		cached_sec = sec;
		cached_utc = utc;
	}
	/* a fixed-size copy the compiler inlines (the text is 19 bytes) */
	if (cached_len <= STRBUF_PAD)
		memcpy(p, cached_text, STRBUF_PAD);
	else
		memcpy(p, cached_text, cached_len);
	p += cached_len;
	/* ".NNNNNNNNN" straight into place: written digit by digit into a
	 * stack array and copied as whole words, it stalled store-to-load
	 * forwarding (the top line of `mark view`'s profile). */
	p[0] = '.';
	text_put_digits(p + 10, (uint64_t)frac, 9);
	return p + 10;
}

char *trace_time_put_seconds(char *p, int64_t ns)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	*p = '-';
	p += ns < 0;
	uint64_t sec = mag / 1000000000;
	unsigned n = text_count_digits(sec);
	text_put_digits(p + n, sec, n);
	p += n;
	p[0] = '.';
	text_put_digits(p + 10, mag % 1000000000, 9);
	return p + 10;
}

void trace_time_append_wall(struct strbuf *sb, int64_t ns, int utc)
{
	if (strbuf_reserve(sb, TRACE_TIME_PUT_MAX) != 0)
		return;
	char *end = trace_time_put_wall(sb->data + sb->len, ns, utc);
	sb->len = (size_t)(end - sb->data);
	*end = '\0';
}

void trace_time_append_seconds(struct strbuf *sb, int64_t ns)
{
	if (strbuf_reserve(sb, TRACE_TIME_PUT_MAX) != 0)
		return;
	char *end = trace_time_put_seconds(sb->data + sb->len, ns);
	sb->len = (size_t)(end - sb->data);
	*end = '\0';
}

void trace_time_append_duration(struct strbuf *sb, uint64_t ns)
{
	if (ns < 1000)
		strbuf_addf(sb, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		strbuf_addf(sb, "%" PRIu64 ".%03" PRIu64 "us", ns / 1000, ns % 1000);
	else if (ns < 1000000000)
		strbuf_addf(sb, "%" PRIu64 ".%06" PRIu64 "ms", ns / 1000000, ns % 1000000);
	else
		strbuf_addf(sb, "%" PRIu64 ".%09" PRIu64 "s", ns / 1000000000, ns % 1000000000);
}
