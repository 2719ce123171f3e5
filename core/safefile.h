/* Writing files where other local users may have planted objects (a FIFO,
 * a device, a symbolic link, a file of theirs). Every file the plugin
 * writes goes through here:
 *   - the destination must be a regular file or absent (a link is refused,
 *     never followed);
 *   - the data goes to a fresh temporary file in the destination's folder,
 *     created exclusively (O_EXCL: nothing planted is ever opened) and
 *     private (0600) until it is renamed over the destination;
 *   - nothing blocks on open.
 * A refusal leaves the destination as it was and says why in err. */
#ifndef ACL_CORE_SAFEFILE_H
#define ACL_CORE_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when path is absent or a regular file; -1 with err otherwise. */
int acl_sfile_check_dest(const char *path, char *err, size_t errlen);

/* Replaces path with len bytes of text (written, synced, renamed), mode
 * mode & ~umask once renamed. 0, or -1 with err and path unchanged. */
int acl_sfile_write_atomic(const char *path, const char *text, size_t len, mode_t mode, char *err,
                           size_t errlen);

/* A file written as a stream (a trace): the temporary file is renamed over
 * path at once and its descriptor returned, mode & ~umask. -1 with err. */
int acl_sfile_open_stream(const char *path, mode_t mode, char *err, size_t errlen);

#endif
