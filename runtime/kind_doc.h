/* A kind described for people: `kairos kinds NAME` in the terminal and,
 * in Markdown, the generated sections of the pages of docs/models/ (which a test
 * keeps equal to the command's output). Not public API. */
#ifndef KAIROS_RUNTIME_KIND_DOC_H
#define KAIROS_RUNTIME_KIND_DOC_H

#include <stdio.h>
#include "kairos/kind.h"

/* "discrete-event (default), agent-based": the kind's formalism, then the
 * others its `formalisms` set allows. */
void kr__kind_formalisms(const kr_kind_desc_t *kind, char *buf, size_t cap);

/* Name, summary, formalisms and the parameter table (name, type,
 * default, range, unit, help), aligned in columns; a kind without a table
 * says so. */
void kr__kind_doc_text(const kr_kind_desc_t *kind, FILE *out);

/* The same as Markdown: a line, the formalisms, a table. */
void kr__kind_doc_markdown(const kr_kind_desc_t *kind, FILE *out);

#endif
