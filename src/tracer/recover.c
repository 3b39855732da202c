/*
 * Crash recovery: complete the trace of a process that died while tracing.
 *
 * What survives a SIGKILL or SIGSEGV: the buffer files (.mark-ring-N, in
 * the page cache even if never written back), the stream files up to the
 * consumer's last write, the metadata up to its last rename, and the
 * statistics file.  For each ring:
 *   1. finish the consumer's commit protocol (trace_format.h): keep the
 *      packet it was writing if the file holds all of it, else cut the
 *      stream at the last committed length;
 *   2. resume at the committed tail and write every committed record up
 *      to the ring's head as packets, exactly as the consumer would have;
 *   3. records whose marker id the metadata never described (a marker
 *      loaded moments before death) cannot be decoded: they are counted in
 *      events_discarded rather than written.
 * Nothing here runs in the dead process; the caller is `mark record` (or
 * any tool) after waitpid().
 */
#define _GNU_SOURCE
#include "tracer_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int recover_ring(const char *dir, const char *name, uint64_t *counts,
			unsigned described, uint64_t *events_out, uint64_t *bytes_out)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat sb;
	if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < MARK_TF_RING_HEADER_SIZE) {
		close(fd);
		unlink(path);   /* created but never initialised: held no event */
		return 0;
	}
	void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	struct mark_tf_ring *hdr = map;
	int rc = 0;
	if (memcmp(hdr->magic, MARK_TF_RING_MAGIC, 8) != 0) {
		/* Never finished initialising: no event was ever committed to it. */
		munmap(map, (size_t)sb.st_size);
		unlink(path);
		return 0;
	}
	uint64_t cap = hdr->capacity;
	if (hdr->version != MARK_TF_RING_VERSION || hdr->header_size != MARK_TF_RING_HEADER_SIZE ||
	    cap < 4096 || (cap & (cap - 1)) || MARK_TF_RING_HEADER_SIZE + cap > (uint64_t)sb.st_size ||
	    hdr->head < hdr->tail || hdr->head - hdr->tail > cap) {
		munmap(map, (size_t)sb.st_size);
		fprintf(stderr, "mark: recover: %s is not a buffer file this version understands; left as is\n",
			path);
		return -EINVAL;
	}
	const uint64_t *data = (const uint64_t *)((char *)map + MARK_TF_RING_HEADER_SIZE);
	char spath[PATH_MAX];
	tracer_path(spath, sizeof(spath), dir, MARK_TF_STREAM_PREFIX, hdr->stream_index);
	int sfd = open(spath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (sfd < 0) {
		rc = -errno;
		munmap(map, (size_t)sb.st_size);
		return rc;
	}
	/*
	 * Commit protocol (trace_format.h): a packet announced in
	 * pending_bytes is complete if the file reaches that length; else
	 * the stream ends at the committed stream_bytes.
	 */
	struct stat ss;
	if (fstat(sfd, &ss) != 0) {
		rc = -errno;
		goto out;
	}
	uint64_t fsize = (uint64_t)ss.st_size;
	uint64_t committed = hdr->stream_bytes, tail = hdr->tail, seq = hdr->packet_seq;
	uint64_t lost_reported = hdr->lost_reported;
	if (hdr->pending_bytes > committed && fsize >= hdr->pending_bytes) {
		struct mark_tf_packet pk;
		if (pread(sfd, &pk, sizeof(pk), (off_t)committed) == (ssize_t)sizeof(pk) &&
		    pk.magic == MARK_TF_CTF_MAGIC && committed + pk.packet_size / 8 == hdr->pending_bytes) {
			committed = hdr->pending_bytes;
			tail = hdr->pending_tail;
			seq = pk.packet_seq_num + 1;
			lost_reported = pk.events_discarded;
		}
	}
	if (committed > fsize)
		committed = fsize;   /* cannot happen: the file holds what was committed */
	if (fsize != committed && ftruncate(sfd, (off_t)committed) != 0) {
		rc = -errno;
		goto out;
	}
	if (lseek(sfd, 0, SEEK_END) < 0) {
		rc = -errno;
		goto out;
	}
	hdr->stream_bytes = committed;
	hdr->tail = tail;
	hdr->packet_seq = seq;
	hdr->lost_reported = lost_reported;
	hdr->pending_bytes = 0;
	uint64_t head = hdr->head;
	uint64_t start = tail;
	if (hdr->mode == MARK_TRACE_OVERWRITE && hdr->oldest > start)
		start = hdr->oldest;
	if (head < start)
		start = head;
	if (head - start > cap)
		start = head - cap;   /* cannot happen with a sane header */
	struct tracer_packet_sink sink = {
		.fd = sfd,
		.uuid = hdr->trace_uuid,
		.index = hdr->stream_index,
		.tid = hdr->tid,
		.seq = seq,
		.stream_bytes = committed,
		.commit = hdr,
		.lost = hdr->lost + hdr->lost_consumer,
		.counts = counts,
		.counts_cap = described,
	};
	uint64_t consumed = start;
	if (start < head) {
		if ((rc = tracer_write_records(&sink, data, cap, start, head, &consumed)) < 0)
			goto out;
		if (consumed < head) {
			/* Undescribed marker ids or a damaged record: count the rest lost. */
			hdr->lost_consumer += tracer_count_records(data, cap, consumed, head);
			consumed = head;
		}
	}
	sink.lost = hdr->lost + hdr->lost_consumer;
	if (sink.lost != hdr->lost_reported) {
		/* Losses after the last packet: an empty packet carries the count. */
		if (!sink.last_ts) {
			/* Timestamp of the stream's last event, from its last packet. */
			struct mark_tf_packet pk;
			uint64_t off = 0, last_end = 0;
			while (off + sizeof(pk) <= sink.stream_bytes &&
			       pread(sfd, &pk, sizeof(pk), (off_t)off) == (ssize_t)sizeof(pk) &&
			       pk.packet_size >= sizeof(pk) * 8) {
				last_end = pk.timestamp_end;
				off += pk.packet_size / 8;
			}
			sink.last_ts = last_end;
		}
		if ((rc = tracer_write_empty_packet(&sink, consumed)) < 0)
			goto out;
	}
	hdr->tail = consumed;
	*events_out += sink.events;
	*bytes_out += sink.bytes;
out:
	close(sfd);
	munmap(map, (size_t)sb.st_size);
	if (rc == 0)
		unlink(path);
	return rc;
}

int mark_process_running(int pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool zombie = false;
	if (fgets(buf, sizeof(buf), f)) {
		/* "pid (comm) S ...": the state follows the last ')' (comm may hold ')') */
		char *p = strrchr(buf, ')');
		zombie = p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	}
	fclose(f);
	return !zombie;
}

static int64_t recover_dir(const char *dir, int depth);

static int64_t recover_children(const char *dir, int depth)
{
	int64_t total = 0, err = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) != 0 || depth > 16)
			continue;
		char sub[PATH_MAX];
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		int64_t r = recover_dir(sub, depth + 1);
		if (r >= 0)
			total += r;
		else if (r != -ENOENT && err == 0)
			err = r;   /* go on with the others; report the first failure */
	}
	closedir(d);
	return err ? err : total;
}

static int64_t recover_dir(const char *dir, int depth)
{
	char path[PATH_MAX];
	tracer_path(path, sizeof(path), dir, MARK_TF_STATS, -1);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	struct stat sb;
	struct mark_tf_stats *st = MAP_FAILED;
	if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size >= sizeof(struct mark_tf_stats))
		st = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (st == MAP_FAILED || memcmp(st->magic, MARK_TF_STATS_MAGIC, 8) != 0 ||
	    st->version != MARK_TF_STATS_VERSION) {
		if (st != MAP_FAILED)
			munmap(st, (size_t)sb.st_size);
		fprintf(stderr, "mark: recover: %s is not a statistics file this version understands\n", path);
		return -EINVAL;
	}
	int64_t total = 0;
	if (st->state == MARK_TF_STATE_RUNNING || st->state == MARK_TF_STATE_STARTING) {
		pid_t pid = st->pid;
		if (pid > 0 && pid != getpid() && mark_process_running(pid)) {
			munmap(st, (size_t)sb.st_size);
			return mark_error(EBUSY, "mark: recover: process %d still writes %s; recover after it "
						 "has exited", (int)pid, dir);
		}
		unsigned described = st->markers_described;
		char mpath[PATH_MAX];
		tracer_path(mpath, sizeof(mpath), dir, MARK_TF_METADATA, -1);
		if (access(mpath, R_OK) != 0)
			described = 0;   /* no metadata: nothing is decodable */
		uint64_t *counts = calloc(MARK_TF_MAX_ID + 1, sizeof(uint64_t));
		if (!counts) {
			munmap(st, (size_t)sb.st_size);
			return mark_error(ENOMEM, "mark: recover: out of memory");
		}
		uint64_t events = 0, bytes = 0;
		int rc = 0;
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (strncmp(e->d_name, MARK_TF_RING_PREFIX, strlen(MARK_TF_RING_PREFIX)) != 0)
				continue;
			int r = recover_ring(dir, e->d_name, counts, described, &events, &bytes);
			if (r < 0 && rc == 0)
				rc = r;
		}
		if (d)
			closedir(d);
		/* Statistics: add what was recovered. */
		uint64_t seq = st->seq;
		__atomic_store_n(&st->seq, seq + 1, __ATOMIC_RELAXED);
		TRACER_FENCE(__ATOMIC_RELEASE);
		struct mark_tf_stats_entry *ent =
			(struct mark_tf_stats_entry *)((char *)st + st->header_size);
		unsigned ne = described < st->max_entries ? described : st->max_entries;
		for (unsigned i = 0; i < ne; i++)
			ent[i].events += counts[i];
		if (ne > st->nentries)
			st->nentries = ne;
		st->events_written += events;
		st->bytes_written += bytes;
		if (st->events < st->events_written)
			st->events = st->events_written;
		st->state = rc == 0 ? MARK_TF_STATE_RECOVERED : MARK_TF_STATE_RUNNING;
		st->update_realtime_ns = tracer_realtime_ns();
		__atomic_store_n(&st->seq, seq + 2, __ATOMIC_RELEASE);
		free(counts);
		if (rc < 0) {
			munmap(st, (size_t)sb.st_size);
			return mark_error(-rc, "mark: recover: could not complete %s: %s", dir, strerror(-rc));
		}
		total += (int64_t)events;
	}
	munmap(st, (size_t)sb.st_size);
	int64_t children = recover_children(dir, depth);
	return children < 0 ? children : total + children;
}

int mark_trace_recover(const char *directory)
{
	mark_error_clear();
	if (!directory || !*directory)
		return mark_error(EINVAL, "mark: recover: no trace directory given");
	struct stat sb;
	if (stat(directory, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return mark_error(ENOENT, "mark: recover: %s is not a directory", directory);
	/* DIR holds one trace per process (pid-P/); DIR itself may be one too. */
	int64_t r = recover_dir(directory, 0);
	if (r == -ENOENT)
		r = recover_children(directory, 0);
	if (r < 0)
		return (int)r;
	return r > INT32_MAX ? INT32_MAX : (int)r;
}
