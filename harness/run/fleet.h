/* fleet.h - a run spread over several GPUs of a host and over machines:
 * which cases a shard takes (--shard K/N), which devices a run drives
 * (--devices 0,1|all), and the dealer that hands the cases, longest first,
 * to one worker thread per device (each thread drives a worker process on
 * its device, which runs one case at a time).
 */
#ifndef FA_FLEET_H
#define FA_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "../base/err.h"

/* The most devices one run drives. */
#define FA_FLEET_MAX_DEVICES 64

/* Parses "K/N" (1 <= K <= N <= 100000). Returns FA_OK, or FA_ERR_USAGE
 * naming text. */
enum fa_rc fa_fleet_parse_shard(const char *text, int *k, int *n, struct fa_err *err);

/* The shard (1..n) a case key belongs to: FNV-1a 64 of the key, modulo n,
 * plus 1. It depends on the key alone, so it is the same wherever the case
 * stands in the suite file and on every machine. */
int fa_fleet_shard_of(const char *key, int n);

/* How many devices of a backend this host has, for --devices all: the
 * test backend's $FABENCH_TEST_DEVICES; for cuda the entries of
 * $CUDA_VISIBLE_DEVICES when set, else the GPUs in /proc/driver/nvidia/gpus;
 * for hip $HIP_VISIBLE_DEVICES or /dev/dri/renderD*; 1 for anything else.
 * Returns at least 1. */
int fa_fleet_device_count(const char *backend);

/* Parses --devices: "all" (every device of the backend) or a comma list of
 * distinct device indices. Fills devices[0..*n). Returns FA_OK or
 * FA_ERR_USAGE naming the value. */
enum fa_rc fa_fleet_parse_devices(const char *text, const char *backend, int *devices, int *n,
				  struct fa_err *err);

/* Writes "0,1,3" into buf. */
void fa_fleet_devices_text(const int *devices, int n, char *buf, size_t size);

/* The order in which the dealer hands out jobs: indices 0..n sorted by
 * cost, largest first, ties in index order (LPT, longest processing time
 * first). order receives n indices. */
void fa_fleet_lpt_order(const double *cost, int n, int *order);

/* Runs job `job` on device `device` (the device's slot in the --devices
 * list is `slot`). Called from the device's thread, with no lock held; it
 * may take fa_fleet_lock around work shared with the other threads (the
 * database, the output). Returns 0 to go on, non-zero to stop dealing.
 * Last, job is FA_FLEET_JOB_END, once per thread, from that thread: the
 * dealing is over, let go of what the thread holds (its worker process). */
typedef int (*fa_fleet_job_fn)(void *ctx, int job, int slot, int device);
#define FA_FLEET_JOB_END (-1)

/* Deals jobs 0..n (in fa_fleet_lpt_order of cost) to one thread per device:
 * each thread takes the next job as soon as its last one is done, so no two
 * jobs ever run on one device at once. Stops dealing when *cancel is set
 * or a job returns non-zero; waits for the jobs under way. Returns FA_OK,
 * or FA_ERR_INTERNAL when a thread could not be started (err says why; the
 * threads started finish their jobs). */
enum fa_rc fa_fleet_deal(const double *cost, int n, const int *devices, int n_devices,
			 fa_fleet_job_fn fn, void *ctx, volatile int *cancel, struct fa_err *err);

/* The lock the job functions share (one per process). */
void fa_fleet_lock(void);
void fa_fleet_unlock(void);

#endif /* FA_FLEET_H */
