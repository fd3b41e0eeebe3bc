# bash completion for dlock(1). Installed as share/bash-completion/completions/dlock.
_dlock() {
  local cur prev words cword
  _init_completion -n = 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
  local sub="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --) # after --: the command and its arguments
        COMPREPLY=($(compgen -c -- "$cur"))
        return ;;
      run | elect | status | list | leader | observe | unlock | demo | doctor | bench) [[ -z $sub ]] && sub=${words[i]} ;;
    esac
  done
  case $prev in
    --url)
      COMPREPLY=($(compgen -W "sqlite:// zk:// etcd:// etcds:// redis:// redis-sentinel:// redlock:// postgres:// mysql://" -- "$cur"))
      compopt -o nospace 2>/dev/null
      return ;;
    -w | --wait | --ttl | --grace | --duration | --time-limit | --hold-at-least | --hold-at-most | --permits)
      COMPREPLY=($(compgen -W "500ms 5s 30s 1m 15m" -- "$cur"))
      return ;;
    --metrics-file)
      _filedir prom 2>/dev/null || COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
    --require)
      COMPREPLY=($(compgen -W "exclusion fencing failover loss-signal fifo shared semaphores elections interop all" -- "$cur"))
      return ;;
    --value) # free text: this node's address, typically
      COMPREPLY=()
      return ;;
    --scenario)
      COMPREPLY=($(compgen -W "uncontended contended waiters many-locks" -- "$cur"))
      return ;;
  esac
  local opts
  case $sub in
    "") opts="run elect status list leader observe unlock demo doctor bench --help --version" ;;
    run) opts="--url -w --wait -n --nonblock --ttl -E --conflict-exit-code --grace --hold-at-least --hold-at-most --permits --metrics-file -q --quiet -v --verbose --help --" ;;
    elect) opts="--value --url -w --wait -n --nonblock --ttl -E --conflict-exit-code --grace --hold-at-least --hold-at-most --metrics-file -q --quiet -v --verbose --help --" ;;
    status | list | leader | observe) opts="--url --json --help" ;;
    doctor) opts="--url --json --require --help" ;;
    unlock) opts="--force --yes -y --url --help" ;;
    demo) opts="flash-sale --url --workers --stock --no-lock --shop --time-limit --json --help" ;;
    bench) opts="--url --scenario --clients --duration --count --waiters --lock --permits --elect --json --help" ;;
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _dlock dlock
