package pmscheck

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// maxListed bounds the ids printed per line of the human report; --json
// has them all.
const maxListed = 10

// WriteText writes the human report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "PMS check of %s (brand %s, %s, code source %s)\n\n", r.PMS, r.Brand, r.Mode, r.CodeSource)
	fmt.Fprintf(&b, "Answers: %d list page(s), %d get(s); attempts by status: %s\n",
		r.Answers.ListPages, r.Answers.Gets, statuses(r.Answers.Statuses))
	if n := r.Answers.TransientGets; n > 0 {
		fmt.Fprintf(&b, "  note: %d get(s) still failed with a 5xx, 429 or no answer after the edge's retries: a flaky PMS, not a broken rule\n", n)
	}
	if len(r.Violations) == 0 {
		fmt.Fprintf(&b, "Contract: every answer follows docs/pms-api.md\n")
	} else {
		fmt.Fprintf(&b, "Contract: %d rule(s) broken (docs/pms-api.md)\n", len(r.Violations))
		for _, v := range r.Violations {
			field := ""
			if v.Field != "" {
				field = " field " + v.Field + ":"
			}
			fmt.Fprintf(&b, "  BROKEN [%s]%s %s (in %s)\n", v.Rule, field, v.Message, v.Seen)
			for _, ex := range v.Examples {
				fmt.Fprintf(&b, "      at %s\n", ex)
			}
		}
	}
	fmt.Fprintf(&b, "\nRecords: %d walked, %d mapped, %d rejected\n", r.Records.Walked, r.Records.Mapped, r.Records.Rejected)
	for _, reason := range slices.Sorted(maps.Keys(r.Rejected)) {
		ids := r.Rejected[reason]
		fmt.Fprintf(&b, "  rejected %s (%d): %s\n", reason, len(ids), some(ids, maxListed, "%q"))
	}
	if len(r.Drift) > 0 {
		fmt.Fprintf(&b, "Drift: the records changed shape (docs/pms-api.md section 5)\n")
		for _, d := range r.Drift {
			fmt.Fprintf(&b, "  %s\n", d.Message)
		}
	}
	if r.Result == nil {
		fmt.Fprintf(&b, "Partners would see no properties: the walk failed, they would get an error\n")
	} else {
		fmt.Fprintf(&b, "Partners would see %d properties: %d listed (active), %d by id only (inactive)\n",
			r.Visible.Properties, r.Visible.Listed, r.Visible.ByIDOnly)
	}
	if d := r.Baseline; d != nil {
		fmt.Fprintf(&b, "\nAgainst baseline %s: %d added, %d removed, %d changed, %d now rejected\n",
			d.File, len(d.Added), len(d.Removed), len(d.Changed), len(d.Rejected))
		if len(d.Removed) > 0 {
			fmt.Fprintf(&b, "  REMOVED: %s\n", some(d.Removed, 100, "%s"))
		}
		for i, rj := range d.Rejected {
			if i == maxListed {
				fmt.Fprintf(&b, "  ... %d more now rejected (--json lists all)\n", len(d.Rejected)-i)
				break
			}
			fmt.Fprintf(&b, "  NOW REJECTED: %s (%s)\n", rj.ID, rj.Reason)
		}
		if len(d.Added) > 0 {
			fmt.Fprintf(&b, "  added: %s\n", some(d.Added, 100, "%s"))
		}
		for i, c := range d.Changed {
			if i == maxListed {
				fmt.Fprintf(&b, "  ... %d more changed (--json lists all)\n", len(d.Changed)-i)
				break
			}
			fmt.Fprintf(&b, "  changed: %s: %s\n", c.ID, strings.Join(c.Fields, ", "))
		}
	}
	if r.OK {
		fmt.Fprintf(&b, "\nResult: OK\n")
	} else {
		fmt.Fprintf(&b, "\nResult: FAILED (%s)\n", strings.Join(r.Failures(), "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Failures says why the check failed, one phrase per cause; empty when OK.
func (r *Report) Failures() []string {
	var out []string
	if n := len(r.Violations); n > 0 {
		var names []string
		for _, v := range r.Violations {
			name := v.Rule
			if v.Field != "" {
				name += " " + v.Field
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		out = append(out, "docs/pms-api.md broken: "+strings.Join(names, ", "))
	}
	if d := r.Baseline; d != nil {
		if len(d.Removed) > 0 {
			out = append(out, fmt.Sprintf("%d baseline properties removed", len(d.Removed)))
		}
		if len(d.Rejected) > 0 {
			out = append(out, fmt.Sprintf("%d baseline properties now rejected", len(d.Rejected)))
		}
	}
	return out
}

// WriteJSON writes the machine report.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func statuses(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// some joins up to most ids, each written with format, saying how many
// more there are: a hundred of the baseline's removed and added ids (what
// a backend team has to explain), maxListed of each rejection reason.
func some(ids []string, most int, format string) string {
	parts := make([]string, 0, min(len(ids), most))
	for _, id := range ids[:min(len(ids), most)] {
		parts = append(parts, fmt.Sprintf(format, id))
	}
	s := strings.Join(parts, ", ")
	if len(ids) > most {
		s += fmt.Sprintf(", ... (%d more; --json lists all)", len(ids)-most)
	}
	return s
}
