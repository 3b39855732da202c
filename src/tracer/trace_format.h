/*
 * On-disk layout of a mark trace directory, shared by the tracer inside
 * libmark and by the `mark` command (record/view/stats/export).  Not
 * installed; the CLI includes it as "tracer/trace_format.h".
 *
 * A trace directory DIR holds one sub-directory per traced process,
 * DIR/pid-P/ (MARK_TF_CHILD_PREFIX), each a complete CTF trace:
 *
 *   metadata            CTF 1.8 TSDL (see docs/tracer.md, "CTF mapping")
 *   stream-N            CTF 1.8 data stream N (one per buffer, N = 0, 1, ...)
 *   .mark-stats         live statistics (struct mark_tf_stats), mmap-able
 *   .mark-ring-N        while the process runs: the shared-memory ring of
 *                       stream N (struct mark_tf_ring + data); removed at a
 *                       clean stop, turned into packets by recovery
 *
 * A forked child, or an exec'd program that inherits MARK_TRACE, writes
 * its own DIR/pid-CHILD/.  babeltrace2 ignores the dot files;
 * `babeltrace2 DIR` finds every pid-P/ trace and merges them by time (they
 * share one clock).  DIR itself never holds a metadata file.
 *
 * Everything is little endian (x86-64, aarch64).  Every structure starts
 * with an 8-byte magic, a version and its own size, so a reader checks
 * magic + version and uses the size fields rather than sizeof() to find
 * what follows.  Readers must accept a larger header_size / entry_size
 * (fields appended in a later minor revision) and reject another version.
 */
#ifndef MARK_TRACE_FORMAT_H
#define MARK_TRACE_FORMAT_H

#include <stdint.h>

/* ------------------------------------------------------------------ */
/* File names                                                          */
/* ------------------------------------------------------------------ */

#define MARK_TF_METADATA "metadata"
/* The metadata being written, renamed over MARK_TF_METADATA when complete.
 * A dot name: CTF readers (babeltrace2, mark's) take every other file of
 * the directory for a stream, so one left by a process killed while
 * writing it made the whole trace unreadable. */
#define MARK_TF_METADATA_TMP ".metadata.tmp"
/* What tracers before that wrote: removed like the other trace files. */
#define MARK_TF_METADATA_TMP_OLD "metadata.tmp"
#define MARK_TF_STREAM_PREFIX "stream-"       /* stream-%u                       */
#define MARK_TF_STATS ".mark-stats"
/* DIR/pid-P/.mark-chunks: events in chunks deleted under max_size (text) */
#define MARK_TF_CHUNKS ".mark-chunks"
#define MARK_TF_CHUNK_INFIX ".chunk-"          /* DIR/pid-P.chunk-K: a sealed chunk */
#define MARK_TF_RING_PREFIX ".mark-ring-"     /* .mark-ring-%u                   */
#define MARK_TF_CHILD_PREFIX "pid-"           /* DIR/pid-%d: trace of one process */
#define MARK_TF_SNAPSHOT_PREFIX "snapshot-"   /* DIR/snapshot-%u/pid-%d: a triggered snapshot */

/* ------------------------------------------------------------------ */
/* .mark-stats: live statistics of one traced process                  */
/* ------------------------------------------------------------------ */

#define MARK_TF_STATS_MAGIC "MARKSTAT"        /* 8 bytes, no NUL                 */
#define MARK_TF_STATS_VERSION 1

enum mark_tf_state {
	MARK_TF_STATE_STARTING = 0,   /* file being initialised                     */
	MARK_TF_STATE_RUNNING = 1,    /* the process is (or was, if it died) tracing */
	MARK_TF_STATE_STOPPED = 2,    /* clean stop: the trace is complete           */
	MARK_TF_STATE_RECOVERED = 3,  /* the process died; mark_trace_recover() made the trace complete */
};

/*
 * The writer is the tracer's consumer thread (one per process).  It
 * updates the file as a seqlock: `seq` is odd while an update is in
 * progress.  A reader (another process, mmap PROT_READ):
 *
 *     do { s1 = load_acquire(&st->seq); if (s1 & 1) retry;
 *          copy the fields (relaxed 64-bit loads);
 *          fence acquire; } while (load(&st->seq) != s1);
 *
 * All counters are cumulative since the session started; they are updated
 * every few milliseconds while the process runs and are exact once
 * `state` is STOPPED or RECOVERED.
 */
struct mark_tf_stats {
	char magic[8];                /* MARK_TF_STATS_MAGIC                          */
	uint32_t version;             /* MARK_TF_STATS_VERSION                        */
	uint32_t header_size;         /* bytes before entries[] (256)                */
	uint32_t entry_size;          /* bytes per entry (128)                        */
	uint32_t max_entries;         /* capacity of entries[]                        */
	int32_t pid;                  /* the traced process                           */
	uint32_t state;               /* enum mark_tf_state                           */
	uint32_t mode;                /* enum mark_trace_mode: 0 discard 1 overwrite 2 block */
	uint32_t nentries;            /* entries[0 .. nentries) are valid           */
	uint64_t seq;                 /* seqlock sequence, odd while updating         */
	uint64_t start_realtime_ns;   /* CLOCK_REALTIME when the session started      */
	uint64_t update_realtime_ns;  /* CLOCK_REALTIME of the last update            */
	uint64_t events;              /* recorded into buffers (includes not yet written) */
	uint64_t lost;                /* discarded (discard mode, full buffer) or
					 overwritten (overwrite mode) or dropped (no
					 buffer could be created, nesting too deep)   */
	uint64_t events_written;      /* written to stream files                      */
	uint64_t bytes_written;       /* bytes of all stream files                    */
	uint64_t buffers;             /* buffers (= streams) created                  */
	uint64_t buffer_size;         /* bytes of data per buffer                     */
	uint32_t markers_described;   /* marker ids 0 .. n-1 are in `metadata`       */
	uint32_t reserved0;
	/* Snapshot triggers (--snapshot-on; zero without): snapshots written
	 * as DIR/snapshot-N/pid-P, and triggers that wrote none because
	 * another snapshot was being written (busy), --max-snapshots were
	 * written, it came within --snapshot-interval, or the write failed. */
	uint64_t snapshots;
	uint64_t triggers_busy;
	uint64_t triggers_over_max;
	uint64_t triggers_in_interval;
	uint64_t triggers_failed;
	/* Events dropped (and counted in `lost`) by a thread whose full
	 * buffer waited for the consumer to copy a triggered snapshot. */
	uint64_t snapshot_hold_lost;
	/* Events that never had a buffer (no buffer could be created, nesting
	 * too deep, an id past MARK_TF_MAX_ID; also in `lost`, at the next
	 * update).  Counted here by the recording threads themselves (atomic
	 * add, relaxed), not by the consumer's updates, so that a recovery
	 * after SIGKILL knows every one of them: the consumer writes them to
	 * stream-4096 at most every 100 ms.  lost_no_ring_ts is the trace
	 * clock at the last one counted (raised with compare-and-swap, never
	 * lowered): the stamp a recovery gives them.  Not under the seqlock;
	 * a reader may see one before the other. */
	uint64_t lost_no_ring;
	uint64_t lost_no_ring_ts;
	/* The counts as of what the stream files held, for recovery after
	 * SIGKILL (struct mark_tf_counted below): two sets at counted_offset
	 * (0: none, a file of an older mark), counted_set (0 or 1) the one
	 * last committed.  Not under the seqlock. */
	uint64_t counted_offset;
	uint64_t counted_set;
	uint64_t reserved[7];         /* zero; pads the header to 256 bytes           */
};

/*
 * entries[i] describes the marker whose id is `id` (entries are in id
 * order; a marker that has not been written yet may be absent).  `events`
 * counts the events of that marker written to stream files.  The name is
 * the event name in the CTF metadata ("name" or "provider:name"),
 * NUL-terminated, cut to 111 bytes if longer (name_len is the full length).
 */
struct mark_tf_stats_entry {
	uint64_t events;
	uint32_t id;
	uint16_t name_len;
	uint16_t reserved;
	char name[112];
};

/* Offset of entry i: header_size + i * entry_size (use the file's values). */

/*
 * The counts the entries give lag the stream files: the consumer writes
 * packets continuously and publishes its counts every few milliseconds.
 * After a SIGKILL, recovery needs the counts that go with an exact point
 * of each stream file, and it cannot tell how far a torn seqlock update
 * got.  So at each update the consumer also writes a counted set: the
 * counts, and for each stream N the length of stream-N (in the live
 * chunk) that they include -- into the set not committed, then commits
 * it with one aligned 8-byte store of counted_set.  SIGKILL stops the
 * consumer between two stores, after which the committed set is whole.
 * Recovery adds the events of stream-N from stream_bytes[N] to the end
 * of its last complete packet, then those it writes from the buffers.
 * Recovery writes a set the same way when it updates the file, so a
 * second one (after a first that failed on a buffer) counts nothing twice.
 */
#define MARK_TF_COUNTED_STREAMS 4096          /* stream indexes of rings      */
#define MARK_TF_COUNTED_IDS 4096              /* marker ids (max_entries)     */
struct mark_tf_counted {
	uint64_t events_written;
	uint64_t bytes_written;
	uint64_t stream_bytes[MARK_TF_COUNTED_STREAMS];
	uint64_t events[MARK_TF_COUNTED_IDS];
};

/* ------------------------------------------------------------------ */
/* .mark-ring-N: one buffer in file-backed shared memory               */
/* ------------------------------------------------------------------ */

#define MARK_TF_RING_MAGIC "MARKRING"
#define MARK_TF_RING_VERSION 3   /* 2: thread names (packets of 104 bytes); 3: 128 gaps, every mode */
#define MARK_TF_RING_HEADER_SIZE 4096         /* data starts at this offset      */
#define MARK_TF_RING_GAPS 128                 /* losses inside a ring remembered */

/*
 * Positions (head, tail, oldest) are byte counts since the buffer was
 * created; they only grow.  The byte at position p is at data offset
 * p & (capacity - 1).  Records are 8-byte aligned and may wrap around the
 * end of the data area.
 *
 * Producer (the thread owning the buffer) writes a record at `head`, then
 * publishes it with a release store of head + size.  In discard and block
 * mode the consumer writes [tail, head) to the stream file and then
 * release-stores tail; the producer waits (block) or drops and counts the
 * event in `lost` (discard) when a record does not fit in
 * capacity - (head - tail).  In overwrite mode the producer itself moves
 * `oldest` past the records it is about to overwrite (counting them in
 * `lost`) before it writes; the valid records are [max(oldest, tail), head).
 */
struct mark_tf_ring {
	char magic[8];                /* MARK_TF_RING_MAGIC                            */
	uint32_t version;             /* MARK_TF_RING_VERSION                          */
	uint32_t header_size;         /* MARK_TF_RING_HEADER_SIZE                      */
	uint64_t capacity;            /* data bytes, a power of two                    */
	int32_t pid;
	uint32_t stream_index;        /* N of stream-N                                 */
	uint32_t mode;                /* enum mark_trace_mode                          */
	uint32_t nesting;             /* 0: thread context; k: signal handler depth k  */
	uint32_t tid;                 /* current owner thread (0: none)               */
	uint32_t state;               /* enum mark_tf_ring_state                       */
	uint8_t trace_uuid[16];       /* the trace's UUID (packet header)              */

	/* Producer-owned (64-byte line of its own). */
	uint64_t head;                /* end of the last committed record              */
	uint64_t oldest;              /* overwrite mode: first valid record            */
	uint64_t lost;                /* cumulative events lost in this buffer         */
	uint64_t events;              /* cumulative events committed                   */
	uint64_t reserved_p[4];

	/* Consumer-owned (64-byte line of its own).  Commit protocol per
	 * packet, so that recovery never loses nor duplicates a packet:
	 * store pending_tail/pending_bytes, write the packet, then store
	 * stream_bytes, packet_seq, lost_reported and (release) tail. */
	uint64_t tail;                /* [.., tail) has been written to stream-N       */
	uint64_t packet_seq;          /* packet_seq_num of the next packet             */
	uint64_t stream_bytes;        /* committed length of stream-N                  */
	uint64_t lost_consumer;       /* events dropped by the consumer (write error,
					 unknown marker id)                        */
	uint64_t pending_tail;        /* ring position after the packet being written  */
	uint64_t pending_bytes;       /* stream length once it is written              */
	uint64_t lost_reported;       /* events_discarded of the last committed packet */
	uint64_t reserved_c;

	/* The owner's thread name when it claimed the buffer (prctl
	 * PR_GET_NAME, cleaned as mark_thread_name_clean() does, zero-padded),
	 * two words stored with relaxed atomics by the claiming producer; for
	 * recovery after a crash.  Zero in files of older tracers. */
	uint64_t thread_name[2];

	/*
	 * Where losses lie between the ring's records (holes): events a
	 * full ring dropped (discard mode, block mode without a consumer), a
	 * record larger than the ring, and in overwrite mode a snapshot
	 * trigger's hold (docs/tracer.md, "Triggers"); an overwrite-mode
	 * ring's other losses are all older than its oldest record.  The
	 * producer notes each hole when it writes the record after it:
	 * gaps[gaps_next % MARK_TF_RING_GAPS] = { position of that record,
	 * events dropped }, then (release) gaps_next + 1, all before that
	 * record's release store of head.  Writers of the ring's records
	 * start a new packet at each gap, so that babeltrace2 reports the
	 * loss there, after the records that came before it.  The last 128
	 * are kept: a reader that finds its window's holes overwritten
	 * reports those losses later (a live ring) or before its records.
	 */
	uint64_t gaps_next;
	struct mark_tf_gap {
		uint64_t pos;             /* ring position of the first record after it    */
		uint64_t count;           /* events dropped there                          */
	} gaps[MARK_TF_RING_GAPS];
};

enum mark_tf_ring_state {
	MARK_TF_RING_FREE = 0,        /* no owner; may be claimed by a new thread       */
	MARK_TF_RING_OWNED = 1,       /* a live thread writes it                        */
	MARK_TF_RING_EXITED = 2,      /* owner exited; the consumer drains, then frees   */
};

/*
 * One record = one CTF event, byte for byte (the consumer copies records
 * into packets unchanged):
 *
 *   uint64_t timestamp;   clock value (TSC ticks or CLOCK_MONOTONIC ns)  } CTF
 *   uint16_t id;          marker id (mark_marker_id), = CTF event id    } event.header
 *   uint16_t size;        bytes of the event as CTF decodes it (up to the
 *                         end of its last field); the record occupies
 *                         MARK_TF_RECORD_SPAN(size) bytes (zero-padded to
 *                         8).  In CTF terms these 2 bytes are alignment
 *                         padding before cpu_id (align 32): decoders skip
 *                         them.  A packet's content_size ends at the last
 *                         event's `size`, so no decoder reads the padding.
 *   uint32_t cpu_id;      CPU the event ran on        (CTF event.context)
 *   payload:              one 8-byte slot per argument, in order (an
 *                         integer of N bytes uses the slot's low N bytes);
 *                         in an event with %s arguments, fields follow CTF
 *                         alignment instead: integers and doubles start at
 *                         8-byte aligned offsets, a string is one length
 *                         byte (0-255, the bytes before the NUL; the tag
 *                         of a CTF variant) then its bytes and NUL, right
 *                         after the previous field
 */
#define MARK_TF_RECORD_SPAN(size) (((uint64_t)(size) + 7) & ~(uint64_t)7)
struct mark_tf_record_header {
	uint64_t timestamp;
	uint16_t id;
	uint16_t size;
	uint32_t cpu_id;
};

#define MARK_TF_MAX_ID 0xfffe                 /* larger marker ids are counted lost */
#define MARK_TF_STRING_MAX 256                /* bytes kept of a %s, with NUL */
/*
 * The byte before a %s's text: its tag, the selector of the CTF variant
 * that holds the text (metadata.c).  0: the empty string; 1 to
 * MARK_TF_STRING_TEXT_MAX: a string kept whole, of that length;
 * MARK_TF_STRING_NULL: a NULL pointer (the text is empty);
 * MARK_TF_STRING_CUT: a longer string, cut to its first
 * MARK_TF_STRING_CUT_KEPT bytes followed by "..." (the text is
 * MARK_TF_STRING_MAX - 1 bytes).  Readers tell the cases apart by the
 * variant's option, never by the text: a NULL is not "(null)", and a
 * string of its own ending in "..." is not cut.  (Traces of older marks
 * have only "empty" and "text": their NULL was "(null)", and 255 was both
 * a whole string's length and a cut one's.)
 */
#define MARK_TF_STRING_TEXT_MAX (MARK_TF_STRING_MAX - 3)
#define MARK_TF_STRING_NULL (MARK_TF_STRING_MAX - 2)
#define MARK_TF_STRING_CUT (MARK_TF_STRING_MAX - 1)
#define MARK_TF_STRING_CUT_KEPT (MARK_TF_STRING_MAX - 4)
_Static_assert(sizeof(struct mark_tf_ring) <= MARK_TF_RING_HEADER_SIZE, "the ring header must fit its page");
_Static_assert(sizeof(struct mark_tf_stats) == 256, "header_size of the statistics file is 256");
_Static_assert(MARK_TF_STRING_CUT <= 255, "a %s tag must fit its byte");

/* ------------------------------------------------------------------ */
/* CTF packet layout of stream-N (also described in `metadata`)        */
/* ------------------------------------------------------------------ */

#define MARK_TF_CTF_MAGIC 0xC1FC1FC1u

/*
 * Each packet is the header + context below followed by records.
 * packet_size == content_size (no padding).  events_discarded is the
 * cumulative number of events lost in this stream up to the end of the
 * packet (CTF semantics; babeltrace2 reports the differences), i.e. the
 * ring's lost + lost_consumer.
 */
struct mark_tf_packet {
	/* trace.packet.header */
	uint32_t magic;               /* MARK_TF_CTF_MAGIC                             */
	uint8_t uuid[16];             /* trace UUID                                    */
	uint32_t stream_id;           /* 0: the only stream class                      */
	uint64_t stream_instance_id;  /* N                                             */
	/* stream.packet.context */
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size;        /* bits                                          */
	uint64_t packet_size;         /* bits                                          */
	uint64_t packet_seq_num;
	uint64_t events_discarded;
	uint32_t tid;                 /* thread that recorded the packet's events      */
	char thread_name[16];         /* its name then (cleaned, zero-padded; text)    */
	uint32_t padding;             /* CTF alignment of the first event header       */
};

/*
 * The label of byte c in the metadata's mark_char_t enumeration (a %c
 * argument), unquoted: the ASCII control names, DEL, 0xNN above 127, else
 * the character itself.  The tracer writes these (metadata.c) and the
 * native reader expects exactly these (cli/trace_native.c).
 */
static inline void mark_tf_char_label(unsigned c, char label[8])
{
	static const char ctl[32][4] = {
		"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF",
		"VT", "FF", "CR", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK",
		"SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
	};
	static const char hex[] = "0123456789abcdef";
	unsigned n = 0;
	if (c < 32) {
		for (const char *p = ctl[c]; *p && n < 3; p++)
			label[n++] = *p;
	} else if (c == 127) {
		label[n++] = 'D';
		label[n++] = 'E';
		label[n++] = 'L';
	} else if (c > 127 && c < 256) {
		label[n++] = '0';
		label[n++] = 'x';
		label[n++] = hex[c >> 4];
		label[n++] = hex[c & 15];
	} else {
		label[n++] = (char)c;
	}
	label[n] = '\0';
}

#endif
