/* Trace time formatting: see trace_time.h. */
#include "trace_time.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

void trace_time_append_wall(struct strbuf *sb, int64_t ns, int utc)
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
	static char cached_text[64 + STRBUF_PAD];   /* padded: strbuf_add_padded() */
	static size_t cached_len;
	if (sec != cached_sec || utc != cached_utc) {
		time_t t = (time_t)sec;
		struct tm tm;
		if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm))) {
			trace_time_append_seconds(sb, ns);
			return;
		}
		cached_len = strftime(cached_text, sizeof(cached_text), "%Y-%m-%d %H:%M:%S", &tm);
		cached_sec = sec;
		cached_utc = utc;
	}
	strbuf_add_padded(sb, cached_text, cached_len);
	/* ".NNNNNNNNN" straight into the buffer: written digit by digit into
	 * a stack array and copied as whole words, it stalled store-to-load
	 * forwarding (the top line of `mark view`'s profile). */
	if (strbuf_reserve(sb, 10) != 0)
		return;
	char *p = sb->data + sb->len;
	p[0] = '.';
	text_put_digits(p + 10, (uint64_t)frac, 9);
	sb->len += 10;
	sb->data[sb->len] = '\0';
}

void trace_time_append_seconds(struct strbuf *sb, int64_t ns)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		strbuf_add(sb, "-", 1);
	strbuf_add_uint(sb, mag / 1000000000, 1);
	strbuf_add(sb, ".", 1);
	strbuf_add_uint(sb, mag % 1000000000, 9);
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
