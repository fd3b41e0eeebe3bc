"""The servers bench/compare measures against, on free 127.0.0.1 ports under one scratch
dir: redis, ZooKeeper, PostgreSQL, MariaDB and etcd. Only the processes started here are
signalled when they stop."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PGBIN = "/usr/lib/postgresql/15/bin"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, timeout, env=None, check=False):
    """(rc, stdout, stderr); a timeout is rc 124. Never raises for the command's failure."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()[-500:]}")
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"


# ---------------------------------------------------------------- servers
class Servers:
    """redis, ZooKeeper, PostgreSQL, MariaDB, etcd on free 127.0.0.1 ports under one scratch
    dir (etcd's data on /dev/shm where there is one: its WAL fsyncs every write)."""

    def __init__(self, base):
        self.base = base
        self.procs = {}
        self.ports = {}
        for k in ("redis", "redis2", "redis3", "zk", "pg", "mysql", "etcd", "etcd_peer"):
            while (p := free_port()) in self.ports.values():
                pass
            self.ports[k] = p
        self.etcd_dir = None
        self.root = os.geteuid() == 0

    def as_user(self, user, cmd):
        return ["runuser", "-u", user, "--"] + cmd if self.root else cmd

    def spawn(self, name, cmd):
        logf = open(os.path.join(self.base, f"{name}.log"), "w")
        self.procs[name] = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def wait(self, name, probe, limit=60):
        t0 = time.time()
        while time.time() - t0 < limit:
            if name in self.procs and self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited; see {self.base}/{name}.log")
            if probe():
                log(f"{name:<9} up on 127.0.0.1:{self.ports[name]} in {time.time() - t0:.1f}s")
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not answer in {limit}s")

    def start(self):
        b, p = self.base, self.ports
        if shutil.which("redis-server"):
            os.makedirs(f"{b}/redis")
            self.spawn("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(p["redis"]),
                                 "--dir", f"{b}/redis", "--save", "", "--appendonly", "no"])
            self.wait("redis", lambda: run(["redis-cli", "-p", str(p["redis"]), "ping"], 2)[1]
                      .strip() == "PONG")
            # Redlock's other two masters (the first is the one above).
            for name in ("redis2", "redis3"):
                os.makedirs(f"{b}/{name}")
                self.spawn(name, ["redis-server", "--bind", "127.0.0.1", "--port", str(p[name]),
                                  "--dir", f"{b}/{name}", "--save", "", "--appendonly", "no"])
                self.wait(name, lambda n=name: run(["redis-cli", "-p", str(p[n]), "ping"], 2)[1]
                          .strip() == "PONG")
        if os.path.exists("/usr/share/java/zookeeper.jar"):
            os.makedirs(f"{b}/zk/data")
            with open(f"{b}/zk/zoo.cfg", "w") as f:
                f.write(f"tickTime=2000\ndataDir={b}/zk/data\nclientPort={p['zk']}\n"
                        "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\n"
                        "admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,stat,mntr\n")
            self.spawn("zk", ["java", "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                              "-cp", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
                              "org.apache.zookeeper.server.quorum.QuorumPeerMain", f"{b}/zk/zoo.cfg"])
            self.wait("zk", lambda: "standalone" in four_letter(p["zk"], "srvr"))
        if os.path.exists(f"{PGBIN}/pg_ctl"):
            data = f"{b}/pg/data"
            os.makedirs(f"{b}/pg")
            if self.root:
                shutil.chown(f"{b}/pg", "postgres", "postgres")
            run(self.as_user("postgres", [f"{PGBIN}/initdb", "-D", data, "-U", "postgres", "-A",
                                          "trust", "--no-sync"]), 120, check=True)
            with open(f"{data}/postgresql.conf", "a") as f:
                f.write(f"listen_addresses='127.0.0.1'\nport={p['pg']}\nmax_connections=300\n"
                        f"unix_socket_directories='{b}/pg'\n"
                        "shared_preload_libraries='pg_stat_statements'\n")
            run(self.as_user("postgres", [f"{PGBIN}/pg_ctl", "-D", data, "-l", f"{b}/pg/log",
                                          "-w", "start"]), 120, check=True)
            self.pg_data = data
            self.wait("pg", lambda: run([f"{PGBIN}/pg_isready", "-q", "-h", "127.0.0.1", "-p",
                                         str(p["pg"])], 2)[0] == 0)
            self.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        if shutil.which("mariadbd") and shutil.which("mariadb-install-db"):
            os.makedirs(f"{b}/mysql")
            if self.root:
                shutil.chown(f"{b}/mysql", "mysql", "mysql")
            run(["mariadb-install-db", "--user=mysql", f"--datadir={b}/mysql/data",
                 "--auth-root-authentication-method=normal", "--skip-test-db"], 120, check=True)
            self.spawn("mysql", ["mariadbd", "--user=mysql", f"--datadir={b}/mysql/data",
                                 f"--port={p['mysql']}", "--bind-address=127.0.0.1",
                                 f"--socket={b}/mysql/sock", f"--pid-file={b}/mysql/pid",
                                 "--skip-name-resolve", "--max-connections=300"])
            sql = ["mariadb", "-h127.0.0.1", f"-P{p['mysql']}", "-uroot"]
            self.wait("mysql", lambda: run(sql + ["-e", "select 1"], 2)[0] == 0)
            run(sql + ["-e", "create database if not exists dlock"], 10, check=True)
            # mode=advisory's own: a database holds one mode's locks.
            run(sql + ["-e", "create database if not exists dlock_adv"], 10, check=True)

        if shutil.which("etcd") and shutil.which("etcdctl"):
            self.start_etcd()

    def psql(self, sql):
        rc, out, err = run(["psql", "-h", "127.0.0.1", "-p", str(self.ports["pg"]), "-U", "postgres",
                            "-d", "postgres", "-Atc", sql], 30)
        return out.strip() if rc == 0 else None

    def statements(self, key):
        """Statements the SQL server has run so far (key 'pg' or 'mysql'), or None: PostgreSQL's
        pg_stat_statements (top-level statements, counted as each ends) or MariaDB's Questions.
        Reading it costs one statement itself."""
        if key.startswith("pg") and "pg" in self.ports:
            v = self.psql("SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements")
        elif key.startswith("mysql") and "mysql" in self.procs:
            rc, out, _ = run(["mariadb", "-h127.0.0.1", f"-P{self.ports['mysql']}", "-uroot", "-N",
                              "-e", "SHOW GLOBAL STATUS LIKE 'Questions'"], 30)
            v = out.split()[-1] if rc == 0 and out.split() else None
        else:
            return None
        try:
            return float(v)
        except (TypeError, ValueError):
            return None

    def start_etcd(self):
        """One etcd member; its data dir on a memory file system when /dev/shm exists, so the
        rows measure etcd's work rather than this shared machine's disk."""
        root = "/dev/shm" if os.path.isdir("/dev/shm") else self.base
        self.etcd_dir = tempfile.mkdtemp(prefix="dlock-compare-etcd-", dir=root)
        os.chmod(self.etcd_dir, 0o700)  # etcd warns about looser modes
        c = f"http://127.0.0.1:{self.ports['etcd']}"
        p = f"http://127.0.0.1:{self.ports['etcd_peer']}"
        self.spawn("etcd", ["etcd", "--name", "compare", "--data-dir", f"{self.etcd_dir}/data",
                            "--listen-client-urls", c, "--advertise-client-urls", c,
                            "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                            "--initial-cluster", f"compare={p}", "--initial-cluster-state",
                            "new", "--logger", "zap", "--log-outputs", "stderr"])
        self.wait("etcd", lambda: run(["etcdctl", f"--endpoints=127.0.0.1:{self.ports['etcd']}",
                                       "--dial-timeout=1s", "endpoint", "health"], 3)[0] == 0)

    def stop(self):
        if getattr(self, "pg_data", None):
            run(self.as_user("postgres", [f"{PGBIN}/pg_ctl", "-D", self.pg_data, "-m", "fast",
                                          "stop"]), 60)
        for name, proc in self.procs.items():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        if self.etcd_dir:
            shutil.rmtree(self.etcd_dir, ignore_errors=True)


def four_letter(port, word):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(word.encode())
            out = b""
            while chunk := s.recv(65536):
                out += chunk
            return out.decode(errors="replace")
    except OSError:
        return ""


