-- Functions that price sequential scans out (`SET enable_seqscan = off`, see
-- 20261202000002) never JIT-compile: with seq scans priced at 10^10, a scan of a
-- one-row table without a usable index (holds.shard_identity, read by the
-- section-ownership trigger on every claim) passes jit_above_cost, and PostgreSQL
-- compiled it on every execution: 0.24 ms became 50-64 ms per claim, StartPayment and
-- ConfirmHold (PostgreSQL: "When to JIT?"). The services' connections run with
-- jit = off already; this makes the functions safe for any caller (pgbench floors,
-- psql, a tool). A function added later with `SET enable_seqscan = off` sets
-- `jit = off` beside it.
DO $$
DECLARE
    v_function regprocedure;
BEGIN
    FOR v_function IN
        SELECT p.oid::regprocedure
        FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('holds', 'catalog', 'payments')
          AND 'enable_seqscan=off' = ANY (p.proconfig)
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET jit = off', v_function);
    END LOOP;
END
$$;
