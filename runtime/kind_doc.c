/* A kind's description for `kairos kinds` and docs/models/: one list of
 * cells per parameter row, laid out as aligned text or as a Markdown
 * table, so that both forms say the same thing. */
#include <stdio.h>
#include <string.h>
#include "runtime/kind_doc.h"
#include "runtime/param_table.h"

void kr__kind_formalisms(const kr_kind_desc_t *kind, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s (default)", kr_formalism_name(kind->formalism));
    for (unsigned f = KR_DISCRETE_EVENT; f <= KR_EMULATION && n < cap; f++)
        if (f != (unsigned)kind->formalism && (kind->formalisms & KR_FORMALISM_BIT(f)))
            n += (size_t)snprintf(buf + n, cap - n, ", %s", kr_formalism_name((kr_formalism_t)f));
}

enum { COLUMNS = 6 };
static const char *const headers[COLUMNS] = { "name", "type", "default", "range", "unit", "help" };

/* The cells of one row; range in `range`. */
static void row_cells(const kr_param_t *row, char range[96], const char *cells[COLUMNS])
{
    kr__param_row_range(row, range, 96);
    cells[0] = row->name;
    cells[1] = kr__param_type_name(row->type);
    cells[2] = row->def ? row->def : "required";
    cells[3] = range;
    cells[4] = row->unit ? row->unit : "";
    cells[5] = row->help ? row->help : "";
}

void kr__kind_doc_text(const kr_kind_desc_t *kind, FILE *out)
{
    char formalisms[160], range[96];
    kr__kind_formalisms(kind, formalisms, sizeof formalisms);
    fprintf(out, "%s: %s\n", kind->name, kind->summary ? kind->summary : "");
    fprintf(out, "formalisms: %s\n", formalisms);
    if (!kind->params) {
        fprintf(out, "parameters: no table declared (the kind reads its params in its setup)\n");
        return;
    }
    if (!kind->params[0].name) {
        fprintf(out, "parameters: none\n");
        return;
    }
    size_t width[COLUMNS];
    for (int c = 0; c < COLUMNS; c++) width[c] = strlen(headers[c]);
    const char *cells[COLUMNS];
    for (size_t i = 0; kind->params[i].name; i++) {
        row_cells(&kind->params[i], range, cells);
        for (int c = 0; c < COLUMNS; c++)
            if (strlen(cells[c]) > width[c]) width[c] = strlen(cells[c]);
    }
    fprintf(out, "parameters:\n");
    for (size_t i = 0; i == 0 || kind->params[i - 1].name; i++) {
        const char *const *shown = headers;
        if (i) {
            row_cells(&kind->params[i - 1], range, cells);
            shown = cells;
        }
        char line[1024];
        size_t n = 0;
        for (int c = 0; c < COLUMNS && n < sizeof line; c++)
            n += (size_t)snprintf(line + n, sizeof line - n, "  %-*s", (int)width[c], shown[c]);
        if (n >= sizeof line) n = sizeof line - 1;
        while (n && line[n - 1] == ' ') n--; /* no trailing blanks */
        fprintf(out, "%.*s\n", (int)n, line);
    }
}

/* A cell's text with | escaped, as Markdown tables need. */
static void md_cell(FILE *out, const char *text, bool code)
{
    if (!text[0]) {
        fputs(" |", out);
        return;
    }
    fputs(code ? " `" : " ", out);
    for (const char *c = text; *c; c++) {
        if (*c == '|') fputc('\\', out);
        fputc(*c, out);
    }
    fputs(code ? "` |" : " |", out);
}

void kr__kind_doc_markdown(const kr_kind_desc_t *kind, FILE *out)
{
    char formalisms[160], range[96];
    kr__kind_formalisms(kind, formalisms, sizeof formalisms);
    fprintf(out, "Kind `%s`: %s\n\n", kind->name, kind->summary ? kind->summary : "");
    fprintf(out, "Formalisms: %s.\n\n", formalisms);
    if (!kind->params) {
        fprintf(out, "No parameter table declared.\n");
        return;
    }
    if (!kind->params[0].name) {
        fprintf(out, "No parameters.\n");
        return;
    }
    fprintf(out, "| Parameter | Type | Default | Range | Unit | Description |\n");
    fprintf(out, "|---|---|---|---|---|---|\n");
    const char *cells[COLUMNS];
    for (size_t i = 0; kind->params[i].name; i++) {
        row_cells(&kind->params[i], range, cells);
        fputc('|', out);
        for (int c = 0; c < COLUMNS; c++)
            md_cell(out, cells[c], (c == 0 || (c == 2 && kind->params[i].def)) && cells[c][0]);
        fputc('\n', out);
    }
}
