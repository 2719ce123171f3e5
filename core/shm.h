/* POSIX shared-memory files (/dev/shm) opened the safe way: never through a
 * link, and an existing one only when it is ours (a regular file owned by
 * the effective uid, mode 0600). Another user can pre-create any name. */
#ifndef ACL_CORE_SHM_H
#define ACL_CORE_SHM_H

#include <stddef.h>
#include <sys/stat.h>

typedef enum acl_shm_rc {
  ACL_SHM_OK = 0,
  ACL_SHM_EXISTS,  /* create: the name is taken (then try acl_shm_open_own) */
  ACL_SHM_ABSENT,  /* open: no such name */
  ACL_SHM_FOREIGN, /* not ours (owner, mode, type or a link): never to be used */
  ACL_SHM_ERROR,
} acl_shm_rc_t;

/* name: "/x" as for shm_open. Creates it exclusively, mode 0600 whatever
 * the umask; *fd open read-write. why: a sentence on failure. */
acl_shm_rc_t acl_shm_create(const char *name, int *fd, char *why, size_t len);
/* Opens an existing one read-write; st filled on ACL_SHM_OK. */
acl_shm_rc_t acl_shm_open_own(const char *name, int *fd, struct stat *st, char *why, size_t len);
/* fn(user, "/name") for every entry of /dev/shm whose name starts with
 * prefix (given with its leading '/'). */
void acl_shm_scan(const char *prefix, void (*fn)(void *user, const char *name), void *user);
/* Whether pid is alive; a pid that is ours to signal or another user's
 * counts as alive, only ESRCH is dead. */
int acl_pid_alive(int pid);

#endif
