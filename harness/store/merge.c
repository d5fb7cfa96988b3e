/* merge.c - copies the runs of several fabench databases into one (fabench
 * merge): per run, its row, then cases, results, samples and every other
 * table that hangs off a run, case or result, with ids remapped through
 * temporary maps. Columns are matched by name, so an input of an older
 * schema merges into a newer output (the columns it lacks stay NULL). Into
 * an existing output the merge is done twice: in a copy, where a refused
 * input changes nothing, then in the output itself (fa_store_merge). */
#include "merge.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/* A run's identity: what two copies of one run share and two runs never do.
 * The two runs of one run --ab share everything else (one command, one
 * start): their labels (LABEL-a, LABEL-b) tell them apart. A run stored
 * since schema 8 adds its uid, which tells apart two runs of one command
 * begun in the same second; one stored before has none, so its identity,
 * as merged_from recorded it, stays what it was. */
#define IDENTITY_SQL(shard, uid)                                                              \
	"coalesce(started_at, '') || '|' || coalesce(host, '') || '|' || coalesce(seed, '') || "   \
	"'|' || coalesce(suite_hash, '') || '|' || coalesce(" shard ", '') || '|' || "             \
	"coalesce(command_line, '') || CASE WHEN ab_group IS NULL THEN '' ELSE '|' || "          \
	"coalesce(label, '') END || CASE WHEN " uid " IS NULL THEN '' ELSE '|' || " uid " END"

struct merger {
	sqlite3 *db;
	const char *out_path, *in_path;
	struct fa_err *err;
	struct fa_merge_out *out;
	const struct fa_merge_opts *opts;
	int64_t one_run;      /* one_run: the combined run's id, 0 until made */
	char *one_suite_hash; /* one_run: its suite hash */
	char *one_from;       /* one_run: the inputs' identity, ';'-free, newline-joined */
	char *one_incomplete; /* one_run: those of them that are incomplete */
};

/* In runs.merged_from, a part that was incomplete when it was combined is
 * its identity, a tab and this word: a later merge of that part, finished
 * by run --resume, adds its new cases and drops the word, and the combined
 * run is complete once no part has it. */
#define INCOMPLETE_MARK "\tincomplete"

static enum fa_rc sql_fail(struct merger *m, const char *what)
{
	return fa_err_set(m->err, FA_ERR_DB, "%s: %s: %s", m->out_path, what, sqlite3_errmsg(m->db));
}

static int exec(struct merger *m, const char *sql)
{
	return sqlite3_exec(m->db, sql, NULL, NULL, NULL);
}

/* The first column of the first row of sql (bound int64 params a, b; -1 to
 * leave unbound) as int64; def when no row. */
static int64_t query_i64(struct merger *m, const char *sql, int64_t a, int64_t b, int64_t def)
{
	sqlite3_stmt *st;
	int64_t v = def;
	if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
		return def;
	if (a != -1)
		sqlite3_bind_int64(st, 1, a);
	if (b != -1)
		sqlite3_bind_int64(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Text of the first column of the first row (malloc'd; NULL when none). */
static char *query_text(struct merger *m, const char *sql, int64_t a)
{
	sqlite3_stmt *st;
	char *v = NULL;
	if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	if (a != -1)
		sqlite3_bind_int64(st, 1, a);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

/* 1 when schema `schema` has column col in table. */
static int has_column(struct merger *m, const char *schema, const char *table, const char *col)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.pragma_table_info('%s') WHERE name = '%s'",
		 schema, table, col);
	return query_i64(m, sql, -1, -1, 0) > 0;
}

/* Copies the rows of table `table` chosen by `where` (a condition on the
 * source row s, with ?1 bound to old and ?2 to a second value) into main:
 * every column both have, but id (fresh) and run_id / case_id / result_id,
 * which become ?3 (the new run) and the maps' new ids. With one_by_one, row
 * by row, recording old id -> new id in temp.map_<table>. Returns the rows
 * copied, or -1 on error. */
static int64_t copy_rows(struct merger *m, const char *table, const char *where, int64_t a,
			 int64_t b, int64_t new_run, int one_by_one)
{
	char cols[4096] = "", exprs[4096] = "", sql[9000], q[300];
	sqlite3_stmt *info, *st = NULL;
	int64_t n = 0;
	snprintf(q, sizeof q, "SELECT name FROM main.pragma_table_info('%s') WHERE name IN "
			      "(SELECT name FROM src.pragma_table_info('%s'))",
		 table, table);
	if (sqlite3_prepare_v2(m->db, q, -1, &info, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(info) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(info, 0);
		char e[200];
		if (strcmp(c, "id") == 0)
			continue;
		if (strcmp(c, "run_id") == 0)
			snprintf(e, sizeof e, "?3");
		else if (strcmp(c, "case_id") == 0)
			snprintf(e, sizeof e, "(SELECT new FROM temp.map_cases WHERE old = s.case_id)");
		else if (strcmp(c, "result_id") == 0)
			snprintf(e, sizeof e,
				 "(SELECT new FROM temp.map_results WHERE old = s.result_id)");
		else
			snprintf(e, sizeof e, "s.\"%s\"", c);
		if (strlen(cols) + strlen(c) + 8 >= sizeof cols ||
		    strlen(exprs) + strlen(e) + 4 >= sizeof exprs)
			break;
		snprintf(cols + strlen(cols), sizeof cols - strlen(cols), "%s\"%s\"", cols[0] ? ", " : "",
			 c);
		snprintf(exprs + strlen(exprs), sizeof exprs - strlen(exprs), "%s%s",
			 exprs[0] ? ", " : "", e);
	}
	sqlite3_finalize(info);
	if (one_by_one) {
		/* row by row: the new id of each old one goes to the map */
		char ids[512], ins[9300];
		sqlite3_stmt *sel;
		snprintf(ids, sizeof ids, "SELECT s.id FROM src.\"%s\" s WHERE %s ORDER BY s.id", table,
			 where);
		snprintf(ins, sizeof ins,
			 "INSERT INTO main.\"%s\" (%s) SELECT %s FROM src.\"%s\" s WHERE s.id = ?4",
			 table, cols, exprs, table);
		if (sqlite3_prepare_v2(m->db, ids, -1, &sel, NULL) != SQLITE_OK)
			return -1;
		if (sqlite3_prepare_v2(m->db, ins, -1, &st, NULL) != SQLITE_OK) {
			sqlite3_finalize(sel);
			return -1;
		}
		sqlite3_bind_int64(sel, 1, a);
		sqlite3_bind_int64(sel, 2, b);
		while (sqlite3_step(sel) == SQLITE_ROW) {
			int64_t old = sqlite3_column_int64(sel, 0), new_id;
			char map[160];
			sqlite3_reset(st);
			sqlite3_bind_int64(st, 1, a);
			sqlite3_bind_int64(st, 2, b);
			sqlite3_bind_int64(st, 3, new_run);
			sqlite3_bind_int64(st, 4, old);
			if (sqlite3_step(st) != SQLITE_DONE) {
				n = -1;
				break;
			}
			new_id = sqlite3_last_insert_rowid(m->db);
			snprintf(map, sizeof map,
				 "INSERT INTO temp.map_%s (old, new) VALUES (%" PRId64 ", %" PRId64 ")",
				 table, old, new_id);
			if (exec(m, map) != SQLITE_OK) {
				n = -1;
				break;
			}
			n++;
		}
		sqlite3_finalize(sel);
		sqlite3_finalize(st);
		return n;
	}
	snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\" (%s) SELECT %s FROM src.\"%s\" s WHERE %s",
		 table, cols, exprs, table, where);
	if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	sqlite3_bind_int64(st, 3, new_run);
	if (sqlite3_step(st) != SQLITE_DONE)
		n = -1;
	else
		n = sqlite3_changes(m->db);
	sqlite3_finalize(st);
	return n;
}

/* Copies the tables other than runs, cases, results and samples that hang
 * off the run being merged (a run_id, case_id or result_id column, in both
 * files). */
static enum fa_rc copy_other_tables(struct merger *m, int64_t old_run, int64_t new_run,
				    int cases_only)
{
	sqlite3_stmt *st;
	enum fa_rc rc = FA_OK;
	if (sqlite3_prepare_v2(m->db,
			       "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name "
			       "NOT IN ('runs', 'cases', 'results', 'samples', 'calibrations') AND "
			       "name NOT LIKE 'sqlite_%' AND name IN (SELECT name FROM "
			       "src.sqlite_master WHERE type = 'table')",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(m, "cannot list the tables");
	while (rc == FA_OK && sqlite3_step(st) == SQLITE_ROW) {
		char *t = strdup((const char *)sqlite3_column_text(st, 0));
		const char *where = NULL;
		if (!t)
			return fa_err_set(m->err, FA_ERR_NOMEM, "out of memory");
		if (has_column(m, "src", t, "run_id"))
			where = cases_only ? NULL : "s.run_id = ?1";
		else if (has_column(m, "src", t, "result_id"))
			where = "s.result_id IN (SELECT old FROM temp.map_results)";
		else if (has_column(m, "src", t, "case_id"))
			where = "s.case_id IN (SELECT old FROM temp.map_cases)";
		if (where && copy_rows(m, t, where, old_run, 0, new_run, 0) < 0)
			rc = sql_fail(m, "cannot copy a table of a run");
		free(t);
	}
	sqlite3_finalize(st);
	return rc;
}

/* 1 when s is a whole entry of the sep-joined list (NULL: empty). */
static int list_has(const char *list, const char *s, const char *sep)
{
	size_t len = strlen(s);
	if (!list)
		return 0;
	for (const char *p = list; (p = strstr(p, s)) != NULL; p++)
		if ((p == list || strncmp(p - strlen(sep), sep, strlen(sep)) == 0) &&
		    (p[len] == '\0' || strncmp(p + len, sep, strlen(sep)) == 0))
			return 1;
	return 0;
}

/* Adds s to the sep-joined list *list (once). */
static int list_add(char **list, const char *s, const char *sep)
{
	size_t n = *list ? strlen(*list) : 0;
	char *nl;
	if (!s || !*s || list_has(*list, s, sep))
		return 0;
	if (!(nl = realloc(*list, n + strlen(sep) + strlen(s) + 1)))
		return -1;
	snprintf(nl + n, strlen(sep) + strlen(s) + 1, "%s%s", n ? sep : "", s);
	*list = nl;
	return 0;
}

/* Run old_run of src is already in the output as run `to` (alone, or as a
 * part of a combined run, whose merged_from line for it is `line`, NULL
 * otherwise): adds the cases the output lacks (the run was resumed since
 * it was merged) with their results and samples, and takes its status when
 * it is now complete. Counts a duplicate when there is nothing to add. */
static enum fa_rc top_up(struct merger *m, int64_t old_run, int64_t to, const char *identity,
			 int combined)
{
	char sql[512];
	int64_t n, add;
	int was_incomplete, now_complete;
	add = query_i64(m,
			"SELECT count(*) FROM src.cases WHERE run_id = ?1 AND idx NOT IN "
			"(SELECT idx FROM main.cases WHERE run_id = ?2)",
			old_run, to, 0);
	now_complete = query_i64(m, "SELECT status = 'complete' FROM src.runs WHERE id = ?1",
				 old_run, -1, 0) == 1;
	if (combined) {
		sqlite3_stmt *st;
		was_incomplete = 0;
		if (sqlite3_prepare_v2(m->db,
				       "SELECT instr(char(10) || merged_from || char(10), char(10) || "
				       "?1 || '" INCOMPLETE_MARK "' || char(10)) > 0 FROM main.runs "
				       "WHERE id = ?2",
				       -1, &st, NULL) != SQLITE_OK)
			return sql_fail(m, "cannot read the merged runs");
		sqlite3_bind_text(st, 1, identity, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, to);
		if (sqlite3_step(st) == SQLITE_ROW)
			was_incomplete = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	} else {
		was_incomplete = query_i64(m, "SELECT status = 'incomplete' FROM main.runs WHERE id = ?1",
					   to, -1, 0) == 1;
	}
	if (add == 0 && !(was_incomplete && now_complete)) {
		m->out->runs_duplicate++;
		return FA_OK;
	}
	exec(m, "DELETE FROM temp.map_cases; DELETE FROM temp.map_results");
	if ((n = copy_rows(m, "cases",
			   "s.run_id = ?1 AND s.idx NOT IN (SELECT idx FROM main.cases WHERE run_id = ?2)",
			   old_run, to, to, 1)) < 0)
		return sql_fail(m, "cannot copy the cases of a run");
	m->out->cases_added += (int32_t)n;
	if ((n = copy_rows(m, "results", "s.case_id IN (SELECT old FROM temp.map_cases)", old_run, 0,
			   to, 1)) < 0)
		return sql_fail(m, "cannot copy the results of a run");
	m->out->results_added += (int32_t)n;
	if ((n = copy_rows(m, "samples", "s.result_id IN (SELECT old FROM temp.map_results)",
			   old_run, 0, to, 0)) < 0)
		return sql_fail(m, "cannot copy the samples of a run");
	m->out->samples_added += (int32_t)n;
	if (copy_other_tables(m, old_run, to, 1) != FA_OK)
		return FA_ERR_DB;
	if (was_incomplete && now_complete) {
		if (combined) {
			sqlite3_stmt *st;
			/* this part is finished; the run is once no part is not */
			if (sqlite3_prepare_v2(m->db,
					       "UPDATE main.runs SET merged_from = trim(replace("
					       "char(10) || merged_from || char(10), char(10) || ?1 || '"
					       INCOMPLETE_MARK "' || char(10), char(10) || ?1 || "
					       "char(10)), char(10)) WHERE id = ?2",
					       -1, &st, NULL) != SQLITE_OK)
				return sql_fail(m, "cannot record the merged runs");
			sqlite3_bind_text(st, 1, identity, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 2, to);
			n = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
			sqlite3_finalize(st);
			if (n < 0)
				return sql_fail(m, "cannot record the merged runs");
			snprintf(sql, sizeof sql,
				 "UPDATE main.runs SET status = 'complete' WHERE id = %" PRId64
				 " AND instr(merged_from, '" INCOMPLETE_MARK "') = 0",
				 to);
		} else {
			snprintf(sql, sizeof sql,
				 "UPDATE main.runs SET (status, finished_at, running) = (SELECT "
				 "status, finished_at, running FROM src.runs WHERE id = %" PRId64
				 ") WHERE id = %" PRId64,
				 old_run, to);
		}
		if (exec(m, sql) != SQLITE_OK)
			return sql_fail(m, "cannot record a resumed run");
	}
	m->out->runs_topped_up++;
	return FA_OK;
}

/* Merges run old_run of the attached src. */
static enum fa_rc merge_run(struct merger *m, int64_t old_run)
{
	char sql[1024], *identity, *hash;
	int64_t new_run, n;
	{
		/* an input of an older schema lacks the newer columns */
		const int shard = has_column(m, "src", "runs", "shard"),
			  uid = has_column(m, "src", "runs", "uid");
		identity = query_text(
			m,
			shard && uid ? "SELECT " IDENTITY_SQL("shard", "uid") " FROM src.runs WHERE id = ?"
			: shard      ? "SELECT " IDENTITY_SQL("shard", "NULL") " FROM src.runs WHERE id = ?"
				     : "SELECT " IDENTITY_SQL("NULL", "NULL") " FROM src.runs WHERE id = ?",
			old_run);
	}
	if (!identity)
		return sql_fail(m, "cannot read a run");
	/* a duplicate: the output holds this run, alone or combined */
	{
		sqlite3_stmt *st;
		int64_t to = 0;
		int combined = 0;
		enum fa_rc rc;
		if (sqlite3_prepare_v2(m->db,
				       "SELECT id, merged_from IS NOT NULL FROM main.runs "
				       "WHERE " IDENTITY_SQL("shard", "uid") " = ?1 OR "
				       "instr(char(10) || coalesce(merged_from, '') || char(10), "
				       "char(10) || ?1 || char(10)) > 0 OR "
				       "instr(char(10) || coalesce(merged_from, '') || char(10), "
				       "char(10) || ?1 || '" INCOMPLETE_MARK "' || char(10)) > 0 "
				       "ORDER BY id LIMIT 1",
				       -1, &st, NULL) != SQLITE_OK) {
			free(identity);
			return sql_fail(m, "cannot look for duplicates");
		}
		sqlite3_bind_text(st, 1, identity, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(st) == SQLITE_ROW) {
			to = sqlite3_column_int64(st, 0);
			combined = sqlite3_column_int(st, 1);
		}
		sqlite3_finalize(st);
		if (to && !m->opts->keep_duplicates && to == m->one_run) {
			/* a part of the run this merge is combining, given twice */
			m->out->runs_duplicate++;
			free(identity);
			return FA_OK;
		}
		if (to && !m->opts->keep_duplicates) {
			rc = top_up(m, old_run, to, identity, combined);
			free(identity);
			return rc;
		}
	}
	hash = query_text(m, "SELECT suite_hash FROM src.runs WHERE id = ?", old_run);
	if (m->opts->one_run) {
		/* the same identity twice among the inputs counts once */
		if (m->one_from) {
			size_t before = strlen(m->one_from);
			if (list_add(&m->one_from, identity, "\n") != 0) {
				free(identity);
				free(hash);
				return fa_err_set(m->err, FA_ERR_NOMEM, "out of memory");
			}
			if (strlen(m->one_from) == before) {
				m->out->runs_duplicate++;
				free(identity);
				free(hash);
				return FA_OK;
			}
		} else if (list_add(&m->one_from, identity, "\n") != 0) {
			free(identity);
			free(hash);
			return fa_err_set(m->err, FA_ERR_NOMEM, "out of memory");
		}
		if (query_i64(m, "SELECT status = 'incomplete' FROM src.runs WHERE id = ?1", old_run,
			      -1, 0) == 1 &&
		    list_add(&m->one_incomplete, identity, "\n") != 0) {
			free(identity);
			free(hash);
			return fa_err_set(m->err, FA_ERR_NOMEM, "out of memory");
		}
		if (m->one_run && !m->opts->mixed_suites &&
		    strcmp(hash ? hash : "", m->one_suite_hash ? m->one_suite_hash : "") != 0) {
			fa_err_set(m->err, FA_ERR_INPUT,
				   "%s: run %" PRId64 " has suite hash '%s', the merged run '%s'; "
				   "--mixed-suites combines them anyway",
				   m->in_path, old_run, hash ? hash : "", m->one_suite_hash ? m->one_suite_hash : "");
			free(identity);
			free(hash);
			return FA_ERR_INPUT;
		}
	}
	free(identity);
	exec(m, "DELETE FROM temp.map_cases; DELETE FROM temp.map_results");
	if (m->opts->one_run && m->one_run) {
		new_run = m->one_run;
		/* a case idx of this run the combined run holds: not shards of one job */
		int64_t clash = query_i64(m,
					  "SELECT idx FROM src.cases WHERE run_id = ?1 AND idx IN "
					  "(SELECT idx FROM main.cases WHERE run_id = ?2) LIMIT 1",
					  old_run, new_run, -1);
		if (clash >= 0) {
			free(hash);
			return fa_err_set(m->err, FA_ERR_INPUT,
					  "%s: run %" PRId64 " and the merged run both hold case %" PRId64
					  "; --one-run combines disjoint shards only",
					  m->in_path, old_run, clash + 1);
		}
	} else {
		if (copy_rows(m, "runs", "s.id = ?1", old_run, 0, 0, 0) != 1) {
			free(hash);
			return sql_fail(m, "cannot copy a run");
		}
		new_run = sqlite3_last_insert_rowid(m->db);
		m->out->run_id = new_run;
		if (m->opts->one_run) {
			m->one_run = new_run;
			m->one_suite_hash = hash;
			hash = NULL;
		}
		m->out->runs_added++;
	}
	free(hash);
	if ((n = copy_rows(m, "cases", "s.run_id = ?1", old_run, 0, new_run, 1)) < 0)
		return sql_fail(m, "cannot copy the cases of a run");
	m->out->cases_added += (int32_t)n;
	if ((n = copy_rows(m, "results", "s.run_id = ?1", old_run, 0, new_run, 1)) < 0)
		return sql_fail(m, "cannot copy the results of a run");
	m->out->results_added += (int32_t)n;
	if ((n = copy_rows(m, "samples", "s.result_id IN (SELECT old FROM temp.map_results)",
			   old_run, 0, new_run, 0)) < 0)
		return sql_fail(m, "cannot copy the samples of a run");
	m->out->samples_added += (int32_t)n;
	if (m->opts->one_run) {
		/* the combined run's provenance: every source's host, shard and devices */
		static const char *const cols[] = {"host", "shard", "devices"};
		for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
			char *have, *add;
			snprintf(sql, sizeof sql, "SELECT %s FROM main.runs WHERE id = ?", cols[i]);
			have = query_text(m, sql, new_run);
			snprintf(sql, sizeof sql, "SELECT %s FROM src.runs WHERE id = ?", cols[i]);
			add = has_column(m, "src", "runs", cols[i]) ? query_text(m, sql, old_run) : NULL;
			if (add && list_add(&have, add, cols[i][0] == 'd' ? ";" : ",") == 0) {
				sqlite3_stmt *st;
				snprintf(sql, sizeof sql, "UPDATE main.runs SET %s = ? WHERE id = ?",
					 cols[i]);
				if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) == SQLITE_OK) {
					sqlite3_bind_text(st, 1, have, -1, SQLITE_TRANSIENT);
					sqlite3_bind_int64(st, 2, new_run);
					sqlite3_step(st);
					sqlite3_finalize(st);
				}
			}
			free(have);
			free(add);
		}
		/* complete only when every part is */
		snprintf(sql, sizeof sql,
			 "UPDATE main.runs SET status = 'incomplete' WHERE id = %" PRId64
			 " AND (SELECT status FROM src.runs WHERE id = %" PRId64 ") = 'incomplete'",
			 new_run, old_run);
		exec(m, sql);
	}
	return copy_other_tables(m, old_run, new_run, 0);
}

/* Copies the calibrations the output lacks. */
static enum fa_rc merge_calibrations(struct merger *m)
{
	char where[] = "NOT EXISTS (SELECT 1 FROM main.calibrations c WHERE c.measured_at = "
		       "s.measured_at AND c.device_name = s.device_name AND c.backend = s.backend)";
	if (copy_rows(m, "calibrations", where, 0, 0, 0, 0) < 0)
		return sql_fail(m, "cannot copy the calibrations");
	return FA_OK;
}

static enum fa_rc merge_input(struct merger *m, const char *path)
{
	struct fa_store *probe = NULL;
	sqlite3_stmt *st, *att;
	enum fa_rc rc;
	int64_t *ids = NULL;
	int n = 0, cap = 0;
	/* a file that is there and is a fabench database (migrated when it may be) */
	if ((rc = fa_store_open_readonly(path, &probe, m->err)) != FA_OK)
		return rc;
	fa_store_close(probe);
	m->in_path = path;
	if (sqlite3_prepare_v2(m->db, "ATTACH ? AS src", -1, &att, NULL) != SQLITE_OK)
		return sql_fail(m, "cannot attach an input");
	sqlite3_bind_text(att, 1, path, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(att) != SQLITE_DONE) {
		sqlite3_finalize(att);
		return fa_err_set(m->err, FA_ERR_DB, "%s: cannot read it: %s", path,
				  sqlite3_errmsg(m->db));
	}
	sqlite3_finalize(att);
	/* a file with no tables (an empty file) is a database with no runs:
	 * nothing to add, and nothing is written into it */
	if (sqlite3_prepare_v2(m->db, "SELECT count(*) FROM src.sqlite_master", -1, &st, NULL) !=
	    SQLITE_OK) {
		rc = sql_fail(m, "cannot read an input");
		exec(m, "DETACH src");
		return rc;
	}
	n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	if (n <= 0) {
		rc = n < 0 ? sql_fail(m, "cannot read an input") : FA_OK;
		exec(m, "DETACH src");
		return rc;
	}
	n = 0;
	/* one transaction per input, for speed: the file is a copy that only
	 * replaces the output once everything is in */
	if (exec(m, "BEGIN IMMEDIATE") != SQLITE_OK) {
		rc = sql_fail(m, "cannot start the merge");
		exec(m, "DETACH src");
		return rc;
	}
	rc = FA_OK;
	if (sqlite3_prepare_v2(m->db, "SELECT id FROM src.runs WHERE ?1 <= 0 OR id = ?1 ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		rc = sql_fail(m, "cannot list the runs of an input");
	else
		sqlite3_bind_int64(st, 1, m->opts->only_run);
	while (rc == FA_OK && sqlite3_step(st) == SQLITE_ROW) {
		if (n == cap) {
			int64_t *ni = realloc(ids, sizeof *ids * (size_t)(cap ? 2 * cap : 16));
			if (!ni) {
				rc = fa_err_set(m->err, FA_ERR_NOMEM, "out of memory");
				break;
			}
			ids = ni;
			cap = cap ? 2 * cap : 16;
		}
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	if (rc == FA_OK || st)
		sqlite3_finalize(st);
	for (int i = 0; i < n && rc == FA_OK; i++)
		rc = merge_run(m, ids[i]);
	if (rc == FA_OK)
		rc = merge_calibrations(m);
	free(ids);
	if (rc == FA_OK && exec(m, "COMMIT") != SQLITE_OK)
		rc = sql_fail(m, "cannot commit the merge");
	if (rc != FA_OK)
		exec(m, "ROLLBACK");
	exec(m, "DETACH src");
	return rc;
}

/* Copies the database at from (when there) into the file to. 0, -1 on error. */
static int copy_db(const char *from, const char *to, struct fa_err *err)
{
	sqlite3 *src = NULL, *dst = NULL;
	sqlite3_backup *b;
	int rc;
	if (sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_open_v2(to, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
		    SQLITE_OK) {
		fa_err_set(err, FA_ERR_DB, "cannot copy '%s': %s", from,
			   sqlite3_errmsg(dst ? dst : src));
		sqlite3_close(src);
		sqlite3_close(dst);
		return -1;
	}
	b = sqlite3_backup_init(dst, "main", src, "main");
	rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE)
		fa_err_set(err, FA_ERR_DB, "cannot copy '%s': %s", from, sqlite3_errmsg(dst));
	sqlite3_close(src);
	sqlite3_close(dst);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Removes a temporary database and what SQLite left beside it. */
static void remove_db(const char *path)
{
	char p[4200];
	unlink(path);
	snprintf(p, sizeof p, "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-journal", path);
	unlink(p);
}

/* The private copy of a merge into out_path: OUT.merge-HOST-PID, so that a
 * later merge on the same host can tell a copy left by a killed merge (its
 * process gone) from one a running merge is using. */
static void part_name(const char *out_path, long pid, char *buf, size_t size)
{
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0 || !host[0])
		snprintf(host, sizeof host, "host");
	for (char *c = host; *c; c++)
		if (*c == '/' || *c == '*' || *c == '?' || *c == '[')
			*c = '_';
	snprintf(buf, size, "%s.merge-%s-%ld", out_path, host, pid);
}

/* Removes the private copies beside out_path that merges killed on this
 * host left (a kill -9 leaves the copy of the whole output, with its -wal
 * and -shm): those whose process is gone. Copies of other hosts (a shared
 * folder) and of running merges stay. */
static void remove_stale_parts(const char *out_path)
{
	char pattern[4200], mine[4300];
	glob_t g;
	part_name(out_path, 0, pattern, sizeof pattern);
	pattern[strlen(pattern) - 1] = '\0'; /* OUT.merge-HOST- */
	snprintf(mine, sizeof mine, "%s", pattern);
	if (strlen(pattern) + 2 >= sizeof pattern)
		return;
	strcat(pattern, "*");
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *rest = g.gl_pathv[i] + strlen(mine);
		char *end = NULL;
		long pid = strtol(rest, &end, 10);
		/* the database itself, not its -wal or -shm (removed with it) */
		if (end == rest || *end || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			remove_db(g.gl_pathv[i]);
	}
	globfree(&g);
}

/* The files OUT.merge-PID beside out_path (digits only after the dash, no
 * -wal or -shm): the private copies of merges of fabench before the
 * copies named their host. Which host's process made one cannot be told,
 * so they are counted for a note, not removed. */
static int count_old_parts(const char *out_path)
{
	char pattern[4200];
	glob_t g;
	int n = 0;
	if (snprintf(pattern, sizeof pattern, "%s.merge-*", out_path) >= (int)sizeof pattern)
		return 0;
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *rest = g.gl_pathv[i] + strlen(out_path) + strlen(".merge-");
		size_t digits = strspn(rest, "0123456789");
		if (digits > 0 && rest[digits] == '\0')
			n++;
	}
	globfree(&g);
	return n;
}

/* Merges inputs[0..n) into the fabench database db_path (opened, created
 * when missing, migrated), one transaction per input; out_path names the
 * output in messages. */
static enum fa_rc merge_into(const char *db_path, const char *out_path, const char *const *inputs,
			     int n, const struct fa_merge_opts *opts, struct fa_merge_out *out,
			     struct fa_err *err)
{
	struct fa_store *s = NULL;
	struct merger m;
	enum fa_rc rc = FA_OK;
	memset(out, 0, sizeof *out);
	memset(&m, 0, sizeof m);
	if ((rc = fa_store_open(db_path, 1, &s, err)) != FA_OK)
		return rc;
	m.db = fa_store_db(s);
	m.out_path = out_path;
	m.err = err;
	m.out = out;
	m.opts = opts;
	if (exec(&m, "CREATE TEMP TABLE map_cases (old INTEGER PRIMARY KEY, new INTEGER);"
		     "CREATE TEMP TABLE map_results (old INTEGER PRIMARY KEY, new INTEGER)") !=
	    SQLITE_OK)
		rc = sql_fail(&m, "cannot start the merge");
	for (int i = 0; i < n && rc == FA_OK; i++)
		rc = merge_input(&m, inputs[i]);
	if (rc == FA_OK && opts->one_run && m.one_run) {
		sqlite3_stmt *st;
		char *from = NULL;
		/* each part's identity, marked when it was incomplete */
		for (char *p = m.one_from; rc == FA_OK && p && *p;) {
			size_t len = strcspn(p, "\n");
			char *line = strndup(p, len), *nl;
			int inc;
			if (!line) {
				rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
				break;
			}
			inc = list_has(m.one_incomplete, line, "\n");
			nl = realloc(from, (from ? strlen(from) : 0) + len + sizeof INCOMPLETE_MARK + 2);
			if (!nl) {
				free(line);
				rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
				break;
			}
			if (!from)
				nl[0] = '\0';
			from = nl;
			sprintf(from + strlen(from), "%s%s%s", from[0] ? "\n" : "", line,
				inc ? INCOMPLETE_MARK : "");
			free(line);
			p += len + (p[len] == '\n');
		}
		if (sqlite3_prepare_v2(m.db,
				       "UPDATE runs SET merged_from = ?, label = coalesce(?, label) "
				       "WHERE id = ?",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, from, -1, SQLITE_TRANSIENT);
			if (opts->label)
				sqlite3_bind_text(st, 2, opts->label, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 3, m.one_run);
			if (sqlite3_step(st) != SQLITE_DONE)
				rc = sql_fail(&m, "cannot record the merged runs");
			sqlite3_finalize(st);
		} else {
			rc = sql_fail(&m, "cannot record the merged runs");
		}
		free(from);
		out->run_id = m.one_run;
	}
	fa_store_close(s);
	free(m.one_suite_hash);
	free(m.one_from);
	free(m.one_incomplete);
	return rc;
}

enum fa_rc fa_store_merge(const char *out_path, const char *const *inputs, int n,
			  const struct fa_merge_opts *opts, struct fa_merge_out *out,
			  struct fa_err *err)
{
	struct stat sb;
	char part[4096];
	int existed;
	enum fa_rc rc;
	memset(out, 0, sizeof *out);
	/* every input is there before anything is written */
	for (int i = 0; i < n; i++)
		if (stat(inputs[i], &sb) != 0)
			return fa_err_set(err, FA_ERR_NOT_FOUND, "no database '%s'", inputs[i]);
	/* first in a private copy, so that an input refused part of the way
	 * (another suite version, overlapping shards, a broken file) leaves the
	 * output as it was */
	existed = stat(out_path, &sb) == 0;
	if (!existed) { /* nothing to keep as it was: one pass, undone on error */
		rc = merge_into(out_path, out_path, inputs, n, opts, out, err);
		if (rc != FA_OK)
			remove_db(out_path);
		return rc;
	}
	/* an output that cannot be written (a folder, a read-only file, not a
	 * database) is refused before the copy, not after the whole merge */
	{
		struct fa_store *probe = NULL;
		if ((rc = fa_store_open(out_path, 0, &probe, err)) != FA_OK)
			return rc;
		fa_store_close(probe);
	}
	remove_stale_parts(out_path);
	part_name(out_path, (long)getpid(), part, sizeof part);
	remove_db(part);
	if (copy_db(out_path, part, err) != 0) {
		remove_db(part);
		return FA_ERR_DB;
	}
	rc = merge_into(part, out_path, inputs, n, opts, out, err);
	remove_db(part);
	if (rc != FA_OK)
		return rc;
	/* then in the output itself, input by input, each in one transaction:
	 * a run writing to it, a reader or another merge keeps its file (a
	 * rename would leave them on the old one and lose what they write),
	 * the file keeps its owner and mode, and the runs of each input appear
	 * whole. It fails here only when the output changed since the copy or
	 * cannot be written; the inputs before the failing one are then in,
	 * and the same merge again adds only what is missing. */
	rc = merge_into(out_path, out_path, inputs, n, opts, out, err);
	out->old_copies = count_old_parts(out_path);
	return rc;
}

int fa_store_spec_file(const char *spec, char *file, size_t size, const char **run)
{
	for (const char *c = strchr(spec, ':'); c; c = strchr(c + 1, ':')) {
		struct stat sb;
		size_t len = (size_t)(c - spec);
		if (len == 0 || len >= size)
			continue;
		memcpy(file, spec, len);
		file[len] = '\0';
		if ((stat(file, &sb) == 0 && S_ISREG(sb.st_mode)) ||
		    (len > 3 && strcmp(file + len - 3, ".db") == 0)) {
			*run = c[1] ? c + 1 : "latest";
			return 1;
		}
	}
	return 0;
}

enum fa_rc fa_store_copy_run(const char *out_path, const char *in_path, const char *run_spec,
			     int64_t *new_id, struct fa_err *err)
{
	struct fa_store *in = NULL;
	struct fa_merge_opts opts;
	struct fa_merge_out out;
	int64_t id = 0;
	enum fa_rc rc;
	*new_id = 0;
	if ((rc = fa_store_open_readonly(in_path, &in, err)) != FA_OK) {
		return rc;
	}
	rc = fa_store_find_run(in, run_spec, &id, err);
	fa_store_close(in);
	if (rc != FA_OK)
		return rc; /* the message names the run and the file */
	memset(&opts, 0, sizeof opts);
	opts.only_run = id;
	opts.keep_duplicates = 1;
	if ((rc = fa_store_merge(out_path, &in_path, 1, &opts, &out, err)) != FA_OK)
		return rc;
	*new_id = out.run_id;
	return FA_OK;
}
