/* cmd_calibrate.c - `fabench calibrate`: measures the device's copy
 * bandwidth and matrix rate and stores them; reports then show results as a
 * percent of these measured ceilings (a roofline). */
#include <getopt.h>
#include <string.h>

#include "cmd.h"
#include "../store/store.h"
#include "../base/util.h"

static const char usage_text[] = "usage: fabench calibrate [--backend NAME] [--db PATH]";

/* "312.4 TFLOP/s", "41.2 GFLOP/s": a rate under 1 TFLOP/s (a CPU's) in
 * GFLOP/s, so that it does not print as 0.0; "not measured" for 0. */
static void format_rate(double tflops, char *buf, size_t size)
{
	if (!(tflops > 0))
		snprintf(buf, size, "not measured");
	else if (tflops >= 1)
		snprintf(buf, size, "%.1f TFLOP/s", tflops);
	else
		snprintf(buf, size, "%.1f GFLOP/s", tflops * 1e3);
}

static void help(void)
{
	printf("%s\n\n"
	       "Measures the chosen backend's device-to-device copy bandwidth (bytes read +\n"
	       "written) and its dense matrix-product rate (16-bit and fp32 on a GPU, fp32 on\n"
	       "the CPU), prints them and stores them for the device. Reports divide each\n"
	       "result by the latest calibration of its device to show the percent of the\n"
	       "measured peak.\n\n"
	       "options:\n"
	       "  --backend NAME   cpu, cuda, hip or auto (default)\n"
	       "  --db PATH        database (default results/fabench.db, or $FABENCH_DB)\n",
	       usage_text);
}

int fa_cmd_calibrate(int argc, char **argv)
{
	static const struct option longopts[] = {{"backend", required_argument, 0, 'b'},
						 {"db", required_argument, 0, 'd'},
						 {"help", no_argument, 0, 'h'},
						 {0, 0, 0, 0}};
	const char *want = "auto", *db = fa_cmd_default_db();
	struct fa_registry reg;
	struct fa_backend_slot *s = NULL;
	struct fa_calibration cal;
	struct fa_store *store = NULL;
	struct fa_err err;
	char when[32], rate[32];
	int c, status = FA_EXIT_OK, code;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': want = optarg; break;
		case 'd': db = optarg; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("calibrate", usage_text, c, argv);
		}
	}
	if (optind < argc)
		return fa_cmd_usage_error("calibrate", usage_text, "unexpected argument '%s'",
					  argv[optind]);
	fa_err_clear(&err);
	if (fa_cmd_registry(&reg, &err) != FA_OK)
		return fa_cmd_fail("calibrate", &err);
	if (strcmp(want, "auto") == 0) {
		static const char *const order[] = {"cuda", "hip", "cpu"};
		for (size_t i = 0; i < 3 && !s; i++) {
			s = fa_registry_backend(&reg, order[i]);
			if (s && !s->loaded)
				s = NULL;
		}
	} else {
		s = fa_registry_backend(&reg, want);
		if (!s || !s->loaded) {
			fprintf(stderr, "fabench calibrate: backend '%s' is not available%s%s\n", want,
				s ? ": " : "", s ? s->why : "");
			fa_registry_free(&reg);
			return FA_EXIT_USAGE;
		}
	}
	if (!s || !s->be.iface.calibrate) {
		fprintf(stderr, "fabench calibrate: backend %s cannot calibrate\n", s ? s->name : "?");
		fa_registry_free(&reg);
		return FA_EXIT_FAIL;
	}
	printf("calibrating %s (%s)...\n", s->name, s->info.name);
	fflush(stdout);
	if ((code = s->be.iface.calibrate(s->be.context, &cal)) != 0) {
		char buf[256];
		fprintf(stderr, "fabench calibrate: %s\n", fa_backend_strerror(s, code, buf, sizeof buf));
		fa_registry_free(&reg);
		return FA_EXIT_FAIL;
	}
	snprintf(rate, sizeof rate, "%.1f GB/s", cal.copy_gbps);
	printf("copy bandwidth   %s (read + write)\n", rate);
	format_rate(cal.matmul_tflops, rate, sizeof rate);
	if (cal.matmul_tflops > 0 && cal.matmul_tflops == cal.matmul_fp32_tflops) {
		/* the CPU backend has no 16-bit matrix unit: one fp32 rate serves both */
		printf("matrix rate      %s (fp32; no 16-bit matrix unit used)\n", rate);
	} else {
		printf("matrix rate      %s (16-bit)\n", rate);
		format_rate(cal.matmul_fp32_tflops, rate, sizeof rate);
		printf("matrix rate fp32 %s\n", rate);
	}
	printf("method           %s\n", cal.method);
	fa_time_iso(when, sizeof when);
	if (fa_store_open(db, 1, &store, &err) != FA_OK ||
	    fa_store_calibration_save(store, s->name, &s->info, &cal, when, &err) != FA_OK)
		status = fa_cmd_fail("calibrate", &err);
	else
		printf("stored in %s\n", db);
	if (store)
		fa_store_close(store);
	fa_registry_free(&reg);
	return status;
}
