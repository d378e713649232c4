# attnscope-cli.bash: bash completion for attnscope-cli's commands, options and their values.
#
# Load it in a shell with `source app/cli/completion/attnscope-cli.bash`, or
# install it as /usr/share/bash-completion/completions/attnscope-cli. It
# needs bash 4.3 or later and nothing else; when the bash-completion package
# is loaded, its _filedir completes file names (it knows about ~, quoting
# and symlinked folders), else compgen does.
#
# The tables below are the only place here that knows attnscope-cli's command
# line. app/tests/man_completion_test.py compares them with every --help, so a
# new option that is not added here fails the tests.

# `declare -g`: bash-completion sources this file from inside a function,
# where a plain declare would make the tables local to that function.

# A command -> the subcommands it takes.
declare -gA _attnscope_cli_commands=(
  [attnscope-cli]="trace export code bench model tokenize kv-memory"
  [attnscope-cli model]="info list pull trace generate lens export bench patterns script compare"
)

# What follows an option (second column of the option tables):
#   -       nothing: the option is a flag
#   file    a file name            dir   a folder name      path   either
#   free    something to type (a number, a seed, a text): nothing to offer
#   NAME    one word of _attnscope_cli_words[NAME]
#   NAME,   a comma-separated list of those words
# A row whose first column is in capitals is a positional argument of the
# command, in the order the command takes them.
declare -gA _attnscope_cli_words=(
  [variant]="simple self_attention_v1 self_attention_v2 causal multihead_wrapper multihead gqa swa
           mla cross"
  [preset]="book shiny translate"
  [kv_preset]="gpt2-124m llama3.2-1b qwen3-0.6b gemma3-270m book-8b book-mla"
  [dtype]="fp32 bf16 fp16 fp8 int8"
  [text_format]="json text"
  [file_format]="svg csv npy json"
  [generate_format]="text json"
  [decimals]="1 2 3 4 5 6"
  [theme]="dark light"
  # The chapter-3 classes' stage ids (core/include/attnscope/base/stages.hpp).
  [stage]="inputs W_query W_key W_value b_query b_key b_value queries keys values scores mask
           masked_scores scaled_scores weights dropout_mask dropped_weights context concat
           W_out b_out output memory W_down b_down W_up_key b_up_key W_up_value b_up_value
           latent_kv group_keys group_values queries_rotated keys_rotated window_mask"
  # A model run's stage ids (docs/trace-format.md, "Model traces").
  [model_stage]="embeddings ln_1 queries keys values scores mask masked_scores scaled_scores
                 weights context concat output attn_output block_output ln_f logits"
)

# Options shared by several commands, as in the man page's sections of the
# same names.
_attnscope_cli_run_options="
  --config       file
  --preset       preset
  --variant      variant
  --d-out        free
  --heads        free
  --dropout      free
  --seed         free
  --qkv-bias     -
  --eval         -
  --random       free
  --input-seed   free
  --embeddings   file
  --weights      path
  --text         free
  --text-file    file
  --d-in         free
  --embed-seed   free
  --positions    free
  --kv-groups    free
  --window       free
  --latent-dim   free
  --rope         -
  --rope-theta   free
  --memory-text  free"
_attnscope_cli_model_text_options="
  MODEL          path
  --config       file
  --text         free
  --text-file    file
  --ids          free
  --keep-last    -"
_attnscope_cli_model_stage_options="
  --layers       free
  --heads        free
  --stages       model_stage,"
_attnscope_cli_help="
  -h             -
  --help         -"

# A command -> its "option value" rows.
declare -gA _attnscope_cli_options=(
  [attnscope-cli]="$_attnscope_cli_help
    --version      -"
  [attnscope-cli trace]="$_attnscope_cli_help $_attnscope_cli_run_options
    --format       text_format
    --cache-step   free"
  [attnscope-cli kv-memory]="$_attnscope_cli_help
    --model        kv_preset
    --emb-dim      free
    --heads        free
    --kv-heads     free
    --layers       free
    --head-dim     free
    --latent-dim   free
    --window       free
    --swa-ratio    free
    --context      free
    --dtype        dtype
    --batch        free
    --format       text_format"
  [attnscope-cli export]="$_attnscope_cli_help $_attnscope_cli_run_options
    --format       file_format
    --out          dir
    --stage        stage
    --head         free
    --row-scale    -
    --decimals     decimals
    --theme        theme"
  [attnscope-cli code]="$_attnscope_cli_help $_attnscope_cli_run_options"
  [attnscope-cli bench]="$_attnscope_cli_help
    --variant      variant
    --tokens       free
    --d-in         free
    --d-out        free
    --heads        free
    --dropout      free
    --seed         free
    --repeat       free
    --eval         -
    --cold         -
    --kv-groups    free
    --window       free
    --latent-dim   free
    --rope         -
    --cache-step   free"
  [attnscope-cli tokenize]="$_attnscope_cli_help
    --vocab        path
    --text         free
    --text-file    file
    --jsonl        -
    --no-special   -"
  [attnscope-cli model]="$_attnscope_cli_help"
  [attnscope-cli model info]="$_attnscope_cli_help
    PATH           path
    --config       file"
  [attnscope-cli model list]="$_attnscope_cli_help"
  [attnscope-cli model pull]="$_attnscope_cli_help
    REPO           free
    --endpoint     free"
  [attnscope-cli model trace]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    $_attnscope_cli_model_stage_options
    --format       text_format
    --next-at      free"
  [attnscope-cli model generate]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    --tokens       free
    --temperature  free
    --top-k        free
    --seed         free
    --format       generate_format"
  [attnscope-cli model lens]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    --position     free
    --top          free
    --format       text_format"
  [attnscope-cli model export]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    $_attnscope_cli_model_stage_options
    --format       file_format
    --out          dir
    --row-scale    -
    --decimals     decimals
    --theme        theme"
  [attnscope-cli model bench]="$_attnscope_cli_help
    MODEL          path
    --config       file
    --tokens       free
    --repeat       free
    --append       -"
  [attnscope-cli model patterns]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    --induction-n  free
    --seed         free"
  [attnscope-cli model script]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    --layer        free
    --head         free
    --top          free"
  [attnscope-cli model compare]="$_attnscope_cli_help $_attnscope_cli_model_text_options
    B              path
    --config-b     file
    --layer        free
    --head         free
    --format       text_format"
)

# Sets `kind` (a local of the caller) to what follows `option` in command
# `cmd`: the table's second column, "" when the option is not in the table.
_attnscope_cli_kind() {
  local cmd=$1 option=$2 i IFS=$' \t\n'
  local -a rows
  read -r -d '' -a rows <<<"${_attnscope_cli_options[$cmd]}"
  kind=
  for ((i = 0; i + 1 < ${#rows[@]}; i += 2)); do
    if [[ ${rows[i]} == "$option" ]]; then
      kind=${rows[i + 1]}
      return
    fi
  done
}

# Prints the first column of `cmd`'s rows: its options, or (with "positional")
# its positional arguments' rows "NAME kind", one a line, in order.
_attnscope_cli_rows() {
  local cmd=$1 what=$2 i IFS=$' \t\n'
  local -a rows
  read -r -d '' -a rows <<<"${_attnscope_cli_options[$cmd]}"
  for ((i = 0; i + 1 < ${#rows[@]}; i += 2)); do
    if [[ $what == positional ]]; then
      [[ ${rows[i]} == [A-Z]* ]] && printf '%s %s\n' "${rows[i]}" "${rows[i + 1]}"
    else
      [[ ${rows[i]} == -* ]] && printf '%s\n' "${rows[i]}"
    fi
  done
}

# COMPREPLY = what `compgen ARGS` prints, one reply per line (so a file
# name with spaces stays one reply).
_attnscope_cli_reply() {
  mapfile -t COMPREPLY < <(compgen "$@")
}

# File or folder names starting with `typed` into COMPREPLY; "-d" for folders only.
_attnscope_cli_files() {
  local typed=$1 folders=$2
  if declare -F _filedir >/dev/null; then
    local cur=$typed  # _filedir completes the caller's $cur
    _filedir ${folders:+"$folders"}
  else
    compopt -o filenames 2>/dev/null  # no-op outside a real completion (tests)
    if [[ $folders == -d ]]; then
      _attnscope_cli_reply -d -- "$typed"
    else
      _attnscope_cli_reply -f -- "$typed"
    fi
  fi
}

# Completes `typed` as the value of an option of this kind into COMPREPLY.
_attnscope_cli_value() {
  local kind=$1 typed=$2
  case $kind in
    file | path) _attnscope_cli_files "$typed" ;;
    dir) _attnscope_cli_files "$typed" -d ;;
    free | - | '') ;;
    *,)
      # Only the item after the last comma is new; the ones before stay as typed.
      local before=${typed%"${typed##*,}"}
      _attnscope_cli_reply -P "$before" -W "${_attnscope_cli_words[${kind%,}]}" -- "${typed##*,}"
      compopt -o nospace 2>/dev/null  # the user may type a comma and go on
      ;;
    *) _attnscope_cli_reply -W "${_attnscope_cli_words[$kind]}" -- "$typed" ;;
  esac
}

# The words of the command line, with "--option=value" in one word: bash
# splits it at "=" (COMP_WORDBREAKS), attnscope-cli reads it whole. Sets the
# caller's `words` and `cword`.
_attnscope_cli_join_words() {
  local i w glue=0 n
  words=()
  cword=0
  for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
    w=${COMP_WORDS[i]}
    n=${#words[@]}
    if ((n > 0)) && [[ $w == "=" && ${words[n - 1]} == --* && ${words[n - 1]} != *=* ]]; then
      words[n - 1]+="="
      glue=1
    elif ((glue)); then
      words[n - 1]+=$w
      glue=0
    else
      words+=("$w")
    fi
    ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
  done
}

_attnscope_cli() {
  local -a words
  local cword kind='' i w
  COMPREPLY=()
  _attnscope_cli_join_words
  local cur=${words[cword]}

  # Walk the words before the cursor: the command they name, and whether the
  # last of them is an option that still waits for its value.
  local cmd=attnscope-cli positionals=0 wants=
  for ((i = 1; i < cword; i++)); do
    w=${words[i]}
    if [[ -n $wants ]]; then
      wants=
    elif [[ $w == -* ]]; then
      [[ $w == *=* ]] && continue
      _attnscope_cli_kind "$cmd" "$w"
      [[ $kind != - ]] && wants=$kind
    elif [[ " ${_attnscope_cli_commands[$cmd]} " == *" $w "* ]]; then
      cmd+=" $w"
    else
      positionals=$((positionals + 1))
    fi
  done

  # "--option value". attnscope-cli takes the word after such an option as its
  # value even when it starts with "-" (--head -1, but also --seed --eval), so
  # no option is offered there.
  if [[ -n $wants ]]; then
    _attnscope_cli_value "$wants" "$cur"
    return
  fi
  if [[ $cur == --*=* ]]; then  # "--option=value"
    _attnscope_cli_kind "$cmd" "${cur%%=*}"
    _attnscope_cli_value "$kind" "${cur#*=}"
    # Without "=" in COMP_WORDBREAKS bash replaces the whole word: keep the option.
    if [[ $COMP_WORDBREAKS != *=* ]]; then
      COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    _attnscope_cli_reply -W "$(_attnscope_cli_rows "$cmd" options)" -- "$cur"
    return
  fi
  if [[ -n ${_attnscope_cli_commands[$cmd]} ]]; then
    _attnscope_cli_reply -W "${_attnscope_cli_commands[$cmd]}" -- "$cur"
    return
  fi
  local -a positional
  mapfile -t positional < <(_attnscope_cli_rows "$cmd" positional)
  if ((positionals < ${#positional[@]})); then  # the next positional argument
    _attnscope_cli_value "${positional[positionals]#* }" "$cur"
  else  # nothing else can stand here: offer the options
    _attnscope_cli_reply -W "$(_attnscope_cli_rows "$cmd" options)" -- "$cur"
  fi
}

complete -F _attnscope_cli attnscope-cli
