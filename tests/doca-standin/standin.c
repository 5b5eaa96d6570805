/*
 * A stand-in for NVIDIA's DOCA libraries (libdoca_common +
 * libdoca_telemetry), for ibpm-agentx's tests on hosts without an adapter.
 *
 * Written for this project from the public API documentation: it exports
 * the C functions the agent binds, with the documented signatures and
 * doca_error_t codes, and produces deterministic samples in each output
 * format.  It is not NVIDIA's code and shares none of its headers.
 *
 * Samples: after start, sample k (k = 0, 1, ...) exists once k+1 sample
 * periods have passed (CLOCK_MONOTONIC).  The value of the applied data ID
 * D in sample k is (k + 1) * step(D), with
 *     step(D) = 1000 * ((D >> 32) & 0xF) + (D >> 56 == 0x11 ? 500 : 0) + (D & 0xFF)
 * so port_rx_bytes of port 1 steps 1001, port_tx_bytes 1501,
 * port_rx_packets 3001, port_tx_packets 3501, port_rx_discard_buf_packets
 * 5001.  Format 2 stores the low 32 bits.  Timestamps: FRC is the
 * monotonic clock's nanoseconds at the sample, RTC the real-time clock's
 * (seconds, nanoseconds); format 0 entry i is stamped i ns after the
 * sample.
 *
 * Switches (environment, read at each call):
 *   DOCA_STANDIN_DEVICES  comma-separated ibdev names listed (default mlx5_0)
 *   DOCA_STANDIN_REJECT   a data ID (hex) the device does not support
 *   DOCA_STANDIN_DROP     N: every Nth query finds the device's buffer went
 *                         round (samples dropped): DOCA_ERROR_SKIPPED
 *   DOCA_STANDIN_FAIL     NAME:CODE[:N]: function NAME returns doca_error_t
 *                         CODE (its first N calls only, when N is given)
 *   DOCA_STANDIN_OWNED    1: another process owns the counters; create
 *                         fails with DOCA_ERROR_IN_USE unless forced
 *   DOCA_STANDIN_LOG      a file each call's name is appended to
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	OK = 0,
	E_IN_USE = 3,
	E_NOT_SUPPORTED = 4,
	E_INVALID_VALUE = 6,
	E_NOT_FOUND = 16,
	E_BAD_STATE = 18,
	E_FULL = 24,
	E_SKIPPED = 30,
};

#define MAX_IDS 64

struct doca_devinfo {
	char name[64];
};

struct doca_dev {
	struct doca_devinfo info;
};

struct doca_telemetry_diag {
	struct doca_dev *dev;
	int format, mode, ts_source, configured, started;
	uint64_t period_ns;
	uint8_t log_max;
	uint32_t max_ids;
	uint64_t ids[MAX_IDS];
	uint32_t n_ids;
	uint64_t t0_mono, t0_real;
	uint64_t next;	    /* next sample id to deliver */
	uint64_t queries;
};

static void log_call(const char *fn)
{
	const char *path = getenv("DOCA_STANDIN_LOG");
	if (path == NULL)
		return;
	FILE *f = fopen(path, "a");
	if (f != NULL) {
		fprintf(f, "%s\n", fn);
		fclose(f);
	}
}

/* The code DOCA_STANDIN_FAIL asks `fn` to return, or OK. */
static int injected(const char *fn)
{
	static unsigned long failed;
	log_call(fn);
	const char *s = getenv("DOCA_STANDIN_FAIL");
	size_t n = strlen(fn);
	if (s == NULL || strncmp(s, fn, n) != 0 || s[n] != ':')
		return OK;
	char *end;
	int code = (int)strtol(s + n + 1, &end, 10);
	if (*end == ':' && failed >= strtoul(end + 1, NULL, 10))
		return OK;
	failed++;
	return code;
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rejected(void)
{
	const char *s = getenv("DOCA_STANDIN_REJECT");
	return s == NULL ? 0 : strtoull(s, NULL, 16);
}

static uint64_t step(uint64_t id)
{
	return 1000 * ((id >> 32) & 0xF) + ((id >> 56) == 0x11 ? 500 : 0) + (id & 0xFF);
}

int doca_devinfo_create_list(struct doca_devinfo ***list, uint32_t *n)
{
	int rc = injected("doca_devinfo_create_list");
	if (rc != OK)
		return rc;
	if (list == NULL || n == NULL)
		return E_INVALID_VALUE;
	const char *env = getenv("DOCA_STANDIN_DEVICES");
	char names[512];
	snprintf(names, sizeof names, "%s", env == NULL ? "mlx5_0" : env);
	struct doca_devinfo **l = calloc(17, sizeof *l);
	uint32_t count = 0;
	for (char *save = NULL, *t = strtok_r(names, ",", &save); t != NULL && count < 16;
	     t = strtok_r(NULL, ",", &save)) {
		l[count] = calloc(1, sizeof **l);
		snprintf(l[count]->name, sizeof l[count]->name, "%s", t);
		count++;
	}
	*list = l;
	*n = count;
	return OK;
}

int doca_devinfo_destroy_list(struct doca_devinfo **list)
{
	log_call("doca_devinfo_destroy_list");
	if (list == NULL)
		return E_INVALID_VALUE;
	for (int i = 0; list[i] != NULL; i++)
		free(list[i]);
	free(list);
	return OK;
}

int doca_devinfo_get_ibdev_name(const struct doca_devinfo *d, char *buf, uint32_t size)
{
	int rc = injected("doca_devinfo_get_ibdev_name");
	if (rc != OK)
		return rc;
	if (d == NULL || buf == NULL || size < 64)
		return E_INVALID_VALUE;
	snprintf(buf, size, "%s", d->name);
	return OK;
}

int doca_dev_open(struct doca_devinfo *d, struct doca_dev **dev)
{
	int rc = injected("doca_dev_open");
	if (rc != OK)
		return rc;
	if (d == NULL || dev == NULL)
		return E_INVALID_VALUE;
	*dev = calloc(1, sizeof **dev);
	(*dev)->info = *d;
	return OK;
}

int doca_dev_close(struct doca_dev *dev)
{
	log_call("doca_dev_close");
	free(dev);
	return OK;
}

int doca_telemetry_diag_cap_is_supported(const struct doca_devinfo *d)
{
	int rc = injected("doca_telemetry_diag_cap_is_supported");
	return d == NULL ? E_INVALID_VALUE : rc;
}

int doca_telemetry_diag_create(struct doca_dev *dev, uint8_t force, struct doca_telemetry_diag **diag)
{
	int rc = injected("doca_telemetry_diag_create");
	if (rc != OK)
		return rc;
	if (dev == NULL || diag == NULL)
		return E_INVALID_VALUE;
	const char *owned = getenv("DOCA_STANDIN_OWNED");
	if (owned != NULL && strcmp(owned, "1") == 0 && !force)
		return E_IN_USE;
	*diag = calloc(1, sizeof **diag);
	(*diag)->dev = dev;
	(*diag)->period_ns = 1000000;
	(*diag)->log_max = 6;
	(*diag)->max_ids = MAX_IDS;
	return OK;
}

int doca_telemetry_diag_destroy(struct doca_telemetry_diag *diag)
{
	log_call("doca_telemetry_diag_destroy");
	if (diag == NULL)
		return E_INVALID_VALUE;
	if (diag->started)
		return E_BAD_STATE;
	free(diag);
	return OK;
}

#define SETTER(name, field, type)                                        \
	int name(struct doca_telemetry_diag *diag, type v)               \
	{                                                                \
		int rc = injected(#name);                                \
		if (rc != OK)                                            \
			return rc;                                       \
		if (diag == NULL)                                        \
			return E_INVALID_VALUE;                          \
		if (diag->configured)                                    \
			return E_BAD_STATE;                              \
		diag->field = v;                                         \
		return OK;                                               \
	}

SETTER(doca_telemetry_diag_set_output_format, format, int)
SETTER(doca_telemetry_diag_set_sample_period, period_ns, uint64_t)
SETTER(doca_telemetry_diag_set_sample_mode, mode, int)
SETTER(doca_telemetry_diag_set_data_timestamp_source, ts_source, int)
SETTER(doca_telemetry_diag_set_log_max_num_samples, log_max, uint8_t)
SETTER(doca_telemetry_diag_set_max_num_data_ids, max_ids, uint32_t)

int doca_telemetry_diag_apply_config(struct doca_telemetry_diag *diag)
{
	int rc = injected("doca_telemetry_diag_apply_config");
	if (rc != OK)
		return rc;
	if (diag == NULL)
		return E_INVALID_VALUE;
	if (diag->format < 0 || diag->format > 2 || diag->period_ns == 0 || diag->log_max > 16)
		return E_NOT_SUPPORTED;
	diag->configured = 1;
	return OK;
}

int doca_telemetry_diag_check_data_id(struct doca_telemetry_diag *diag, uint64_t id)
{
	int rc = injected("doca_telemetry_diag_check_data_id");
	if (rc != OK)
		return rc;
	if (diag == NULL)
		return E_INVALID_VALUE;
	if (!diag->configured || diag->started)
		return E_BAD_STATE;
	return id == rejected() ? E_NOT_SUPPORTED : OK;
}

int doca_telemetry_diag_apply_counters_list_by_id(struct doca_telemetry_diag *diag, const uint64_t *ids,
						  uint32_t n, uint64_t *failed)
{
	int rc = injected("doca_telemetry_diag_apply_counters_list_by_id");
	if (failed != NULL)
		*failed = 0;
	if (rc != OK)
		return rc;
	if (diag == NULL || ids == NULL || failed == NULL)
		return E_INVALID_VALUE;
	if (!diag->configured || diag->started)
		return E_BAD_STATE;
	if (n > diag->max_ids || n > MAX_IDS)
		return E_FULL;
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] == rejected()) {
			*failed = ids[i];
			return E_NOT_SUPPORTED;
		}
	}
	memcpy(diag->ids, ids, n * sizeof *ids);
	diag->n_ids = n;
	return OK;
}

int doca_telemetry_diag_start(struct doca_telemetry_diag *diag)
{
	int rc = injected("doca_telemetry_diag_start");
	if (rc != OK)
		return rc;
	if (diag == NULL)
		return E_INVALID_VALUE;
	if (!diag->configured || diag->n_ids == 0)
		return E_BAD_STATE;
	diag->started = 1;
	diag->t0_mono = now_ns(CLOCK_MONOTONIC);
	diag->t0_real = now_ns(CLOCK_REALTIME);
	diag->next = 0;
	return OK;
}

int doca_telemetry_diag_stop(struct doca_telemetry_diag *diag)
{
	log_call("doca_telemetry_diag_stop");
	if (diag == NULL)
		return E_INVALID_VALUE;
	if (!diag->configured && !diag->started)
		return E_BAD_STATE;
	diag->started = 0;
	diag->configured = 0;
	return OK;
}

static uint32_t sample_size(const struct doca_telemetry_diag *diag)
{
	switch (diag->format) {
	case 0:
		return 8 + 24 * diag->n_ids;
	case 1:
		return 16 + 8 * diag->n_ids;
	default: /* padded to 8 bytes, so readers must step by the size */
		return (16 + 4 * diag->n_ids + 7) & ~7u;
	}
}

int doca_telemetry_diag_get_sample_size(struct doca_telemetry_diag *diag, uint32_t *size)
{
	int rc = injected("doca_telemetry_diag_get_sample_size");
	if (rc != OK)
		return rc;
	if (diag == NULL || size == NULL || !diag->started)
		return E_NOT_SUPPORTED;
	*size = sample_size(diag);
	return OK;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

int doca_telemetry_diag_query_counters(struct doca_telemetry_diag *diag, void *buf, uint32_t max,
				       uint32_t *n_valid)
{
	int rc = injected("doca_telemetry_diag_query_counters");
	if (rc != OK)
		return rc;
	if (diag == NULL || buf == NULL || n_valid == NULL)
		return E_INVALID_VALUE;
	if (!diag->started)
		return E_BAD_STATE;
	diag->queries++;
	uint64_t avail = (now_ns(CLOCK_MONOTONIC) - diag->t0_mono) / diag->period_ns;
	uint64_t cap = 1ull << diag->log_max;
	int skipped = 0;
	const char *drop = getenv("DOCA_STANDIN_DROP");
	long every = drop == NULL ? 0 : atol(drop);
	if (every > 0 && diag->queries % (uint64_t)every == 0 && avail > diag->next) {
		/* The buffer went round since the last read: one sample lost. */
		diag->next++;
		skipped = 1;
	}
	if (avail > diag->next + cap) {
		diag->next = avail - cap;
		skipped = 1;
	}
	uint32_t n = 0;
	uint32_t size = sample_size(diag);
	uint8_t *out = buf;
	while (diag->next < avail && n < max) {
		uint64_t k = diag->next++;
		uint8_t *s = out + (size_t)n * size;
		memset(s, 0, size);
		uint64_t t = (diag->ts_source == 1 ? diag->t0_real : diag->t0_mono) + (k + 1) * diag->period_ns;
		uint32_t h, l;
		put32(s, (uint32_t)k);
		for (uint32_t i = 0; i < diag->n_ids; i++) {
			uint64_t ti = diag->format == 0 ? t + i : t;
			if (diag->ts_source == 1) {
				h = (uint32_t)(ti / 1000000000ull);
				l = (uint32_t)(ti % 1000000000ull);
			} else {
				h = (uint32_t)(ti >> 32);
				l = (uint32_t)ti;
			}
			uint64_t v = (k + 1) * step(diag->ids[i]);
			if (diag->format == 0) {
				uint8_t *e = s + 8 + 24 * i;
				put64(e, diag->ids[i]);
				put32(e + 8, h);
				put32(e + 12, l);
				put64(e + 16, v);
			} else {
				if (i == 0) {
					put32(s + 4, h);
					put32(s + 8, l);
					put32(s + 12, l);
				}
				if (diag->format == 1)
					put64(s + 16 + 8 * i, v);
				else
					put32(s + 16 + 4 * i, (uint32_t)v);
			}
		}
		n++;
	}
	*n_valid = n;
	return skipped ? E_SKIPPED : OK;
}
