# Sourced: start_redis DIR starts a real redis-server on a free loopback port, as the C++
# fixtures start theirs, and sets redis_pid and redis_url. The caller kills $redis_pid.
start_redis() {
  local dir=$1 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' --appendonly no \
    >"$dir/log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.05
  done
  redis-cli -p "$port" ping | grep -q PONG || { echo "redis-server did not start"; cat "$dir/log"; exit 1; }
  redis_url="redis://127.0.0.1:$port"
}
