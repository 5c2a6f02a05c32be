/* collplan_tcp.h: replaying a plan over TCP from C (library collplan::tcp).
 * See collplan.h for plans, buffers and errors, docs/c-api.md for an example,
 * runtime/transport/tcp.h for the transport (handshake, frames, timeouts). */
#ifndef COLLPLAN_TCP_H
#define COLLPLAN_TCP_H

#include "collplan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs rank `rank` of the plan in this process, connected over TCP to the
 * other ranks' processes. `peers`: every rank's "host:port", rank r's entry
 * r, either comma-separated or the name of a file with one per line ('#'
 * comments); the same list on every rank, one entry per plan rank. The call
 * listens on its own entry, connects to the others, checks at the handshake
 * that every peer holds the same plan, replays, and closes the connections.
 * timeout_ms bounds connecting and every wait (0: 10 000 ms); a peer that
 * is silent or gone for that long ends the call in COLLPLAN_ERR_TRANSPORT
 * naming it. Every rank calls it with the same count. */
int collplan_run_tcp(const collplan_plan* plan, const char* peers, int rank, const void* sendbuf, void* recvbuf,
                     size_t count, int timeout_ms);

/* The same set up once for repeated runs: collplan_tcp_init connects and
 * completes the handshakes (every rank calls it), collplan_tcp_run replays
 * on the open connections (every rank, the same count each time), and
 * collplan_tcp_free closes them. The plan handle must outlive the
 * collective; one thread at a time per handle. After a failed run the
 * connections are closed: free the handle and set up again. */
typedef struct collplan_tcp_collective collplan_tcp_collective;
int collplan_tcp_init(const collplan_plan* plan, const char* peers, int rank, int timeout_ms,
                      collplan_tcp_collective** coll);
/* collplan_tcp_init with a job key: `key_file` names a file `collplan
 * keygen` wrote (every rank the same key); peers then prove the key at the
 * handshake and every frame carries a MAC (runtime/transport/tcp.h). A
 * key_file that cannot be read is COLLPLAN_ERR_ARGUMENT. key_file NULL, and
 * the functions without it, take the key from the file the environment
 * variable COLLPLAN_TCP_KEY_FILE names, if set; with no key the transport
 * checks integrity with CRC32C only: for trusted networks. */
int collplan_tcp_init_keyed(const collplan_plan* plan, const char* peers, int rank, int timeout_ms,
                            const char* key_file, collplan_tcp_collective** coll);
int collplan_tcp_run(collplan_tcp_collective* coll, const void* sendbuf, void* recvbuf, size_t count);
void collplan_tcp_free(collplan_tcp_collective* coll);

#ifdef __cplusplus
}
#endif

#endif /* COLLPLAN_TCP_H */
