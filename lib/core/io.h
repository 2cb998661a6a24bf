/*
 * io.h - whole-file reads and atomic file writes.
 *
 * An atomic file is written under "PATH.tmp.PID", flushed, fsynced and
 * renamed over PATH, then the directory is fsynced: readers see the old file
 * or the complete new one, never a partial one. On any failure the temporary
 * is removed; opening one removes the temporaries of PATH whose writer is
 * gone (killed with SIGKILL), as mgpu_tmp_sweep does.
 */
#ifndef MGPU_CORE_IO_H
#define MGPU_CORE_IO_H

#include <stddef.h> /* size_t */
#include <stdio.h>  /* FILE */

struct mgpu_afile {
	char path[4096];
	char tmp[4096 + 32];    /* "" when writing path itself */
	FILE *fp;
};

/* Open a temporary beside path for writing through af->fp. A path that
 * exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is
 * written directly: renaming over it would replace the device. */
int mgpu_afile_open(struct mgpu_afile *af, const char *path);
/* Flush, fsync, close and rename over the final path. */
int mgpu_afile_commit(struct mgpu_afile *af);
/* Close and remove the temporary; safe after a failed commit or open. */
void mgpu_afile_abort(struct mgpu_afile *af);
/* Write a whole buffer atomically. */
int mgpu_write_file_atomic(const char *path, const void *data, size_t len);
/* Read a whole (uncompressed) file into a malloc'ed buffer, NUL-terminated. */
int mgpu_read_file(const char *path, unsigned char **data, size_t *len);
/*
 * Read fd from where it stands to its end (a pipe, a terminal or a regular
 * file alike: nothing is read twice), APPENDING to *data, a malloc'ed buffer
 * of *len bytes or NULL with *len 0. The result is NUL-terminated (not
 * counted in *len). On failure the buffer is freed, *data is NULL and *len 0.
 * name labels messages ("-" for stdin).
 */
int mgpu_read_fd(int fd, const char *name, unsigned char **data, size_t *len);
/* The same, failing with MGPU_ERANGE once *len would pass max bytes (a
 * pipe that does not end). Both wait for input in short slices and stop
 * with MGPU_EINTR on a stop request (core/cancel.h), even while a pipe or
 * FIFO stays silent. */
int mgpu_read_fd_max(int fd, const char *name, size_t max, unsigned char **data,
		     size_t *len);
/* Wait until fd has input (or its end, or an error read() will report),
 * polling the stop request: 0, or MGPU_EINTR. A read that blocks would
 * not return on a signal (the tools' handlers restart system calls). */
int mgpu_wait_input(int fd);
/* fsync a directory so a rename inside it is durable. */
int mgpu_fsync_dir(const char *dir);
/* buf = dir/name, or MGPU_EINVAL when it does not fit. */
int mgpu_path_join(char *buf, size_t len, const char *dir, const char *name);
/* mkdir -p. */
int mgpu_mkdirs(const char *path);
/* The same; *made receives the length of the prefix of path that is the
 * shallowest directory this call created (0: none), also when it fails,
 * so that a caller can remove what it made and no more. */
int mgpu_mkdirs_made(const char *path, size_t *made);

/*
 * Temporaries are named "STEM.tmp.PID". The pid in name when it is such a
 * temporary of stem (any stem when stem is NULL), else 0.
 */
long mgpu_tmp_pid(const char *name, const char *stem);
/*
 * Remove the temporaries of stem (NULL: any) in dir whose process is gone
 * (kill(pid, 0) fails with ESRCH): what a killed run left. A temporary
 * directory goes with the files in it. Best effort; returns how many went.
 */
int mgpu_tmp_sweep(const char *dir, const char *stem);
/* The mkstemp/mkdtemp template "PREFIX" followed by six X in buf (cap
 * bytes); a usage error when it does not fit. */
int mgpu_tmp_template(char *buf, size_t cap, const char *prefix);
/* Remove a directory and the files directly in it (no subdirectories). */
int mgpu_rmdir_flat(const char *dir);
/* Do files a and b hold the same bytes? 1 yes, 0 no, or an error. */
int mgpu_same_bytes(const char *a, const char *b);

#endif
