/* buildstore.c - build_runs and build_results (the schema is described in
 * buildstore.h and created by store.c's migration 3 -> 4). All SQL uses
 * bound parameters. */
#include "buildstore.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/util.h"

static enum fa_rc db_fail(struct fa_store *s, struct fa_err *err, const char *what)
{
	return fa_err_set(err, FA_ERR_DB, "%s in '%s': %s", what, fa_store_path(s),
			  sqlite3_errmsg(fa_store_db(s)));
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v && *v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static void bind_num(sqlite3_stmt *st, int i, long long v)
{
	if (v >= 0)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

enum fa_rc fa_build_begin(struct fa_store *s, const struct fa_build_info *bi, int64_t *id,
			  struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	sqlite3_stmt *st = NULL;
	char now[32];
	fa_time_iso(now, sizeof now);
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO build_runs (started_at, git_commit, git_dirty, host, "
			       "label, command_line, version, tools) VALUES (?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err, "cannot store the build run");
	bind_text(st, 1, now);
	bind_text(st, 2, bi->git_commit);
	bind_num(st, 3, bi->git_dirty);
	bind_text(st, 4, bi->host);
	bind_text(st, 5, bi->label);
	bind_text(st, 6, bi->command_line);
	bind_text(st, 7, bi->version);
	bind_text(st, 8, bi->tools);
	if (sqlite3_step(st) != SQLITE_DONE) {
		sqlite3_finalize(st);
		return db_fail(s, err, "cannot store the build run");
	}
	sqlite3_finalize(st);
	*id = sqlite3_last_insert_rowid(db);
	return FA_OK;
}

static int insert_row(sqlite3_stmt *st, int64_t id, const struct fa_bm_job *j,
		      const struct fa_isa_kernel *k, const char *name)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	sqlite3_bind_int64(st, 1, id);
	bind_text(st, 2, j->source);
	bind_text(st, 3, j->arch);
	bind_text(st, 4, fa_bm_family_name(j->family));
	bind_text(st, 5, j->compiler);
	bind_text(st, 6, fa_bm_status_name(j->status));
	if (!k) {
		bind_text(st, 7, j->error);
		if (j->status != FA_BM_SKIPPED)
			sqlite3_bind_double(st, 8, j->compile_s);
	} else {
		bind_text(st, 9, k->symbol);
		bind_text(st, 10, name);
		bind_num(st, 11, k->regs);
		bind_num(st, 12, k->sgprs);
		bind_num(st, 13, k->shared_bytes);
		bind_num(st, 14, k->scratch_bytes);
		bind_num(st, 15, k->spill_bytes);
		bind_num(st, 16, k->spill_regs);
		bind_num(st, 17, k->matrix_count);
		if (k->matrix_count >= 0)
			sqlite3_bind_text(st, 18, k->matrix, -1, SQLITE_TRANSIENT);
		bind_text(st, 19, fa_isa_from_name(k->from));
	}
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

enum fa_rc fa_build_add(struct fa_store *s, int64_t id, const struct fa_bm_job *j,
			struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(s, err, "cannot store a build result");
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO build_results (build_id, source, arch, family, compiler, "
			       "status, error, compile_s, symbol, name, regs, sgprs, shared_bytes, "
			       "scratch_bytes, spill_bytes, spill_regs, matrix_count, matrix, "
			       "isa_from) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		goto fail;
	if (insert_row(st, id, j, NULL, NULL) != 0)
		goto fail;
	for (int i = 0; j->status == FA_BM_OK && i < j->isa.n; i++)
		if (insert_row(st, id, j, &j->isa.k[i], j->names ? j->names[i] : NULL) != 0)
			goto fail;
	sqlite3_finalize(st);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		enum fa_rc rc = db_fail(s, err, "cannot store a build result");
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return FA_OK;
fail:;
	enum fa_rc rc = db_fail(s, err, "cannot store a build result");
	sqlite3_finalize(st);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

enum fa_rc fa_build_end(struct fa_store *s, int64_t id, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	char now[32];
	fa_time_iso(now, sizeof now);
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "UPDATE build_runs SET status = 'complete', finished_at = ? "
			       "WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err, "cannot finish the build run");
	bind_text(st, 1, now);
	sqlite3_bind_int64(st, 2, id);
	if (sqlite3_step(st) != SQLITE_DONE) {
		sqlite3_finalize(st);
		return db_fail(s, err, "cannot finish the build run");
	}
	sqlite3_finalize(st);
	return FA_OK;
}

enum fa_rc fa_build_find(struct fa_store *s, const char *ref, int64_t *id, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	char *end;
	long long n = strtoll(ref, &end, 10);
	int by_id = *ref && !*end && n > 0, rc;
	const char *sql = strcmp(ref, "latest") == 0
				  ? "SELECT id FROM build_runs ORDER BY id DESC LIMIT 1"
			  : by_id ? "SELECT id FROM build_runs WHERE id = ?"
				  : "SELECT id FROM build_runs WHERE label = ? ORDER BY id DESC LIMIT 1";
	if (sqlite3_prepare_v2(fa_store_db(s), sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err, "cannot read the build runs");
	if (by_id)
		sqlite3_bind_int64(st, 1, n);
	else if (strcmp(ref, "latest") != 0)
		sqlite3_bind_text(st, 1, ref, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		return FA_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_fail(s, err, "cannot read the build runs");
	return fa_err_set(err, FA_ERR_NOT_FOUND, "no build-matrix run '%s' in '%s'", ref,
			  fa_store_path(s));
}

static char *col_text(sqlite3_stmt *st, int i, int *oom)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	char *c;
	if (!t)
		return NULL;
	if (!(c = strdup((const char *)t)))
		*oom = 1;
	return c;
}

static long long col_num(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

enum fa_rc fa_build_load(struct fa_store *s, int64_t id, struct fa_build_table *t,
			 struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	int oom = 0, cap = 0, rc;
	memset(t, 0, sizeof *t);
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT started_at, finished_at, git_commit, host, label, status, "
			       "tools FROM build_runs WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err, "cannot read the build runs");
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return db_fail(s, err, "cannot read the build runs");
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no build-matrix run '%lld' in '%s'",
				  (long long)id, fa_store_path(s));
	}
	t->id = id;
	t->started_at = col_text(st, 0, &oom);
	t->finished_at = col_text(st, 1, &oom);
	t->git_commit = col_text(st, 2, &oom);
	t->host = col_text(st, 3, &oom);
	t->label = col_text(st, 4, &oom);
	t->status = col_text(st, 5, &oom);
	t->tools = col_text(st, 6, &oom);
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT source, arch, family, compiler, status, error, compile_s, "
			       "symbol, name, regs, sgprs, shared_bytes, scratch_bytes, spill_bytes, "
			       "spill_regs, matrix_count, matrix, isa_from FROM build_results "
			       "WHERE build_id = ? ORDER BY source, symbol IS NOT NULL, "
			       "COALESCE(name, symbol), symbol, arch, id",
			       -1, &st, NULL) != SQLITE_OK) {
		fa_build_table_free(t);
		return db_fail(s, err, "cannot read the build results");
	}
	sqlite3_bind_int64(st, 1, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && !oom) {
		struct fa_build_row *r;
		const unsigned char *status;
		if (t->n == cap) {
			int ncap = cap ? cap * 2 : 64;
			struct fa_build_row *grown = realloc(t->rows, (size_t)ncap * sizeof *grown);
			if (!grown) {
				oom = 1;
				break;
			}
			t->rows = grown;
			cap = ncap;
		}
		r = &t->rows[t->n++];
		memset(r, 0, sizeof *r);
		r->source = col_text(st, 0, &oom);
		r->arch = col_text(st, 1, &oom);
		r->family = col_text(st, 2, &oom);
		r->compiler = col_text(st, 3, &oom);
		status = sqlite3_column_text(st, 4);
		r->status = status ? fa_bm_status_parse((const char *)status) : -1;
		r->error = col_text(st, 5, &oom);
		r->compile_s = sqlite3_column_type(st, 6) == SQLITE_NULL ? NAN
									 : sqlite3_column_double(st, 6);
		r->symbol = col_text(st, 7, &oom);
		r->name = col_text(st, 8, &oom);
		r->regs = col_num(st, 9);
		r->sgprs = col_num(st, 10);
		r->shared_bytes = col_num(st, 11);
		r->scratch_bytes = col_num(st, 12);
		r->spill_bytes = col_num(st, 13);
		r->spill_regs = col_num(st, 14);
		r->matrix_count = col_num(st, 15);
		r->matrix = col_text(st, 16, &oom);
		r->isa_from = col_text(st, 17, &oom);
	}
	sqlite3_finalize(st);
	if (oom) {
		fa_build_table_free(t);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		fa_build_table_free(t);
		return db_fail(s, err, "cannot read the build results");
	}
	return FA_OK;
}

void fa_build_table_free(struct fa_build_table *t)
{
	for (int i = 0; i < t->n; i++) {
		struct fa_build_row *r = &t->rows[i];
		free(r->source);
		free(r->arch);
		free(r->family);
		free(r->compiler);
		free(r->error);
		free(r->symbol);
		free(r->name);
		free(r->matrix);
		free(r->isa_from);
	}
	free(t->rows);
	free(t->started_at);
	free(t->finished_at);
	free(t->git_commit);
	free(t->host);
	free(t->label);
	free(t->status);
	free(t->tools);
	memset(t, 0, sizeof *t);
}
