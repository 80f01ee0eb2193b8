import type { Command } from "commander";

/** Every command of the tree with the words that may follow it: subcommands, then its options. */
function completions(command: Command, path: string[] = []): { path: string[]; words: string[] }[] {
  const words = [
    ...command.commands.filter((sub) => sub.name() !== "help").map((sub) => sub.name()),
    ...command.options.flatMap((option) =>
      [option.long, option.short].filter((flag): flag is string => !!flag),
    ),
    "--help",
  ];
  return [{ path, words }, ...command.commands.flatMap((sub) => completions(sub, [...path, sub.name()]))];
}

/**
 * A bash completion script for `program` (zsh loads it through bashcompinit): the words typed so
 * far pick the command, and its subcommands and options are offered; anything else (a file, an
 * id) falls back to file names.
 */
export function bashCompletion(program: Command): string {
  const tree = completions(program);
  const name = program.name();
  const known = tree
    .filter((entry) => entry.path.length > 0)
    .map((entry) => `"${entry.path.join(" ")}"`)
    .join("|");
  const cases = tree
    .map((entry) => `    "${entry.path.join(" ")}") words="${entry.words.join(" ")}" ;;`)
    .join("\n");
  return `# ${name} completion for bash and zsh: add to ~/.bashrc or ~/.zshrc
#   source <(${name} completion)
if [ -n "$ZSH_VERSION" ]; then autoload -U +X bashcompinit && bashcompinit; fi
_${name}_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word i words=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$word" in -*) continue ;; esac
    case "\${path:+$path }$word" in
      ${known}) path="\${path:+$path }$word" ;;
    esac
  done
  case "$path" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _${name}_complete ${name}
`;
}

/**
 * A fish completion script for `program`: the same tree as bash's. Fish filters the offered words
 * by what is typed and lists file names beside them, so the script only says which words follow
 * the command typed so far.
 */
export function fishCompletion(program: Command): string {
  const tree = completions(program);
  const name = program.name();
  const known = tree
    .filter((entry) => entry.path.length > 0)
    .map((entry) => `'${entry.path.join(" ")}'`)
    .join(" ");
  const cases = tree
    .map(
      (entry) =>
        `        case '${entry.path.join(" ")}'\n            printf '%s\\n' ${entry.words.join(" ")}`,
    )
    .join("\n");
  return `# ${name} completion for fish: add to ~/.config/fish/config.fish
#   ${name} completion fish | source
function __${name}_words
    set -l path ''
    for word in (commandline -opc)[2..-1]
        string match -q -- '-*' $word; and continue
        set -l next (string trim -- "$path $word")
        contains -- $next ${known}; and set path $next
    end
    switch $path
${cases}
    end
end
complete -c ${name} -a '(__${name}_words)'
`;
}
