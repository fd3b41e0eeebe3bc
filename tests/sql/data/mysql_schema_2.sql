-- dlock's MySQL/MariaDB DDL of schema version 2, verbatim from src/backends/mysql/my_schema.cpp
-- at commit cf8e9b8 (before entry values), its macros expanded. Statements are separated by
-- lines holding only "$$" (procedure bodies contain ';'). Read by tests/sql/mysql_schema_test.cpp.
$$
CREATE TABLE IF NOT EXISTS dlock_meta(k VARCHAR(64) PRIMARY KEY, v VARCHAR(255) NOT NULL) ENGINE=InnoDB
$$
CREATE TABLE IF NOT EXISTS dlock_sessions(id VARBINARY(64) PRIMARY KEY, owner VARBINARY(1024) NOT NULL, expires_ms BIGINT NOT NULL, conn BIGINT NULL) ENGINE=InnoDB
$$
ALTER TABLE dlock_sessions ADD COLUMN conn BIGINT NULL
$$
CREATE TABLE IF NOT EXISTS dlock_fences(name VARBINARY(1024) PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB
$$
CREATE TABLE IF NOT EXISTS dlock_entries(id VARBINARY(255) PRIMARY KEY, name VARBINARY(1024) NOT NULL, kind TINYINT NOT NULL, token BIGINT NOT NULL, session VARBINARY(64) NOT NULL, created_ms BIGINT NOT NULL, UNIQUE KEY name_token(name, token), KEY by_session(session)) ENGINE=InnoDB
$$
DROP PROCEDURE IF EXISTS dlock_queue
$$
CREATE PROCEDURE dlock_queue(IN p_name VARBINARY(1024), IN p_session VARBINARY(64))
BEGIN
  DECLARE t BIGINT DEFAULT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED);
  IF EXISTS (SELECT 1 FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session
             WHERE e.name = p_name AND e.session <> p_session
               AND (s.id IS NULL OR s.expires_ms <= t OR NOT (s.conn IS NULL OR IFNULL(IS_USED_LOCK(CONCAT('dlock_session:', s.id)), 0) = s.conn))) THEN
    DELETE FROM dlock_sessions WHERE id IN (SELECT e.session FROM dlock_entries e
        WHERE e.name = p_name AND e.session <> p_session)
      AND (expires_ms <= t OR NOT (dlock_sessions.conn IS NULL OR IFNULL(IS_USED_LOCK(CONCAT('dlock_session:', dlock_sessions.id)), 0) = dlock_sessions.conn));
    DELETE e FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session
    WHERE e.name = p_name AND (s.id IS NULL OR s.expires_ms <= t);
  END IF;
  SELECT e.id, e.kind, e.token, e.created_ms, s.owner, s.expires_ms - t
  FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session
  WHERE e.name = p_name AND s.expires_ms > t ORDER BY e.token;
END
$$
DROP PROCEDURE IF EXISTS dlock_enqueue
$$
CREATE PROCEDURE dlock_enqueue(IN p_session VARBINARY(64), IN p_name VARBINARY(1024),
                               IN p_id VARBINARY(255), IN p_kind TINYINT)
BEGIN
  DECLARE t BIGINT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  IF NOT EXISTS (SELECT 1 FROM dlock_sessions
                 WHERE id = p_session AND expires_ms > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)                   AND conn = CONNECTION_ID()) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dlock session expired';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM dlock_entries WHERE id = p_id) THEN
    START TRANSACTION;
    INSERT INTO dlock_fences(name, fence) VALUES (p_name, 1)
      ON DUPLICATE KEY UPDATE fence = fence + 1;
    SELECT fence INTO t FROM dlock_fences WHERE name = p_name;
    INSERT INTO dlock_entries(id, name, kind, token, session, created_ms)
      VALUES (p_id, p_name, p_kind, t, p_session, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED));
    COMMIT;
  END IF;
  CALL dlock_queue(p_name, p_session);
END
$$
INSERT INTO dlock_meta(k, v) VALUES ('schema_version', '2') ON DUPLICATE KEY UPDATE v = '2'
$$
